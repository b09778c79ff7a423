import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Compaction when a store opens (``StorageCompaction``): how the free fraction is measured, how other
/// processes are seen, and the order of the steps.
extension Environment {
    /// What an open asks of compaction: the free fraction above which it compacts, and whom to tell each
    /// stage (for the log, and for tests that stop a process at a stage).
    struct CompactionRequest: Sendable {
        /// Compacts when the free fraction exceeds this (0 compacts a file with any free page; -1 always).
        var threshold: Double
        /// Told each stage of the copy and swap as it completes.
        var step: @Sendable (String) -> Void = { _ in }
        /// Entries the environment is checked by before it is compacted: a named database, a key in it, and why
        /// its value (nil when absent) forbids the compaction, or nil. The store's layout marker in `meta` must be
        /// there (another program's LMDB environment is never rewritten, however free), and its key check value
        /// must take the open's key (an open refused for its key leaves the file untouched).
        var entryChecks: [EntryCheck] = []
    }

    /// One of ``CompactionRequest/entryChecks``.
    struct EntryCheck: Sendable {
        var database: String
        var key: [UInt8]
        var refusal: @Sendable ([UInt8]?) -> String?
    }

    /// The value of `key` in the named database `database` of the environment `raw` (in its newest snapshot), nil
    /// when the database or the key is not there.
    static func storedValue(_ raw: OpaquePointer, database: String, key: [UInt8]) throws -> [UInt8]? {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(raw, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        defer { mdb_txn_abort(txn) }
        var dbi = MDB_dbi()
        let opened = database.withCString { mdb_dbi_open(txn, $0, 0, &dbi) }
        if opened == MDB_NOTFOUND || opened == MDB_INCOMPATIBLE { return nil }
        try check(opened, "mdb_dbi_open")
        var key = key
        return try key.withUnsafeMutableBytes { bytes in
            var name = MDB_val(mv_size: bytes.count, mv_data: bytes.baseAddress)
            var value = MDB_val()
            let code = mdb_get(txn, dbi, &name, &value)
            if code == MDB_NOTFOUND { return nil }
            try check(code, "mdb_get")
            return Array(UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size))
        }
    }

    /// The store's space as the data file sees it.
    struct FreeSpace: Sendable, Equatable {
        /// Pages of the data file (its length over the page size).
        var filePages: Int
        /// Pages no database uses: on LMDB's free list, or past the last page written.
        var freePages: Int

        /// Free pages over all pages of the data file; 0 for an empty file.
        var fraction: Double { filePages > 0 ? Double(freePages) / Double(filePages) : 0 }
    }

    /// The free pages of the open environment `raw` whose data file is in `directory`.
    static func freeSpace(_ raw: OpaquePointer, directory: String) throws -> FreeSpace {
        var info = MDB_envinfo()
        mdb_env_info(raw, &info)
        var main = MDB_stat()
        try check(mdb_env_stat(raw, &main), "mdb_env_stat")
        var txn: OpaquePointer?
        try check(mdb_txn_begin(raw, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        guard let txn else { throw LMDBError(code: EINVAL, call: "mdb_txn_begin", caller: #function) }
        defer { mdb_txn_abort(txn) }
        let listed = try Transaction(handle: txn, isReadOnly: true).freePageCount()
        var file = stat()
        let dataPath = Environment.file("data.mdb", in: directory)
        let pageSize = max(1, Int(main.ms_psize))
        let written = info.me_last_pgno + 1
        let filePages = stat(dataPath, &file) == 0 ? max(written, Int(file.st_size) / pageSize) : written
        return FreeSpace(filePages: filePages, freePages: min(filePages, listed + filePages - written))
    }

    /// The processes other than this one holding a slot in the reader table of `raw`
    /// (`mdb_reader_list`, after `mdb_reader_check` cleared the slots of dead ones).
    static func otherReaderProcesses(_ raw: OpaquePointer) throws -> Set<Int32> {
        var dead: Int32 = 0
        try check(mdb_reader_check(raw, &dead), "mdb_reader_check")
        let me = getpid()
        return Set(try readerSlotOwners(raw).filter { $0 != me })
    }

    /// The process of each slot in use in the reader table of `raw` (`mdb_reader_list`), dead ones included.
    static func readerSlotOwners(_ raw: OpaquePointer) throws -> [Int32] {
        var lines: [String] = []
        let code = withUnsafeMutablePointer(to: &lines) { collected in
            mdb_reader_list(
                raw,
                { message, context in
                    guard let message, let context else { return 0 }
                    context.assumingMemoryBound(to: [String].self).pointee.append(String(cString: message))
                    return 0
                }, collected)
        }
        try check(code, "mdb_reader_list")
        // A header line ("pid thread txnid"), then one line per slot starting with its pid.
        return lines.compactMap { line in line.split(separator: " ").first.flatMap { Int32($0) } }
    }

    /// Opens the store with `open` while this process holds the store's lock exclusively, compacting it
    /// first when `request` asks for it and no other process has the store open.
    ///
    /// The store is opened and measured as usual; when its free fraction exceeds the threshold and its
    /// reader table names no other process, it is closed, compacted by ``DataFileCompactor`` (which also
    /// makes sure through LMDB's lock that no process has it open) and opened again.
    /// - Returns: The open handle, whether the open recreated an unfinished data file, the outcome, and the
    ///   descriptor of `lock.mdb` to close after the environment (-1 for none).
    static func openCompacting(
        directory: String, mapSize: Int, request: CompactionRequest,
        open: () throws -> (handle: OpaquePointer, recreated: Bool)
    ) throws -> (handle: OpaquePointer, recreated: Bool, outcome: CompactionOutcome, lockFile: Int32) {
        DataFileCompactor.removeLeftovers(directory: directory)
        let first = try open()
        let space: FreeSpace
        let others: Set<Int32>
        do {
            space = try freeSpace(first.handle, directory: directory)
            others = try otherReaderProcesses(first.handle)
        } catch {
            // The store opened: it stays open as it is, only the compaction is given up.
            let reason = "cannot measure the free pages: \(error)"
            return (first.handle, first.recreated, .failed(freeFraction: 0, reason: reason), -1)
        }
        let wanted = request.threshold < 0 || (space.freePages > 0 && space.fraction > request.threshold)
        guard wanted else {
            return (first.handle, first.recreated, .notNeeded(freeFraction: space.fraction), -1)
        }
        if let pid = others.min() {
            let reason = "another process (pid \(pid)) has the store open (its reader table)"
            return (first.handle, first.recreated, .skipped(freeFraction: space.fraction, reason: reason), -1)
        }
        for entryCheck in request.entryChecks {
            do {
                let stored = try storedValue(first.handle, database: entryCheck.database, key: entryCheck.key)
                if let reason = entryCheck.refusal(stored) {
                    return (first.handle, first.recreated, .refused(freeFraction: space.fraction, reason: reason), -1)
                }
            } catch {
                let reason = "cannot read its databases: \(error)"
                return (first.handle, first.recreated, .failed(freeFraction: space.fraction, reason: reason), -1)
            }
        }
        // The copy walks every tree inside LMDB: every page is checked first, and damage leaves the store as it
        // is, uncompacted.
        do {
            try Environment.checkPages(first.handle, everyPage: true)
        } catch {
            return (first.handle, first.recreated, .failed(freeFraction: space.fraction, reason: "\(error)"), -1)
        }
        mdb_env_close(first.handle)
        let result = DataFileCompactor.compact(
            directory: directory, freeFraction: space.fraction, mapSize: mapSize, step: request.step)
        do {
            let reopened = try open()
            return (reopened.handle, first.recreated, result.outcome, result.lockFile)
        } catch {
            closeLockFile(result.lockFile)
            throw error
        }
    }
}

extension Environment {
    /// What a compaction at open did when another holder had the store's open lock: skipped, with the free
    /// fraction it would have compared.
    static func busyOutcome(_ raw: OpaquePointer, directory: String) -> CompactionOutcome {
        do {
            let space = try freeSpace(raw, directory: directory)
            return .skipped(
                freeFraction: space.fraction,
                reason: "another process, or a store of this one still closing, has the store open (its open lock)")
        } catch {
            return .failed(freeFraction: 0, reason: "cannot measure the free pages: \(error)")
        }
    }
}

/// Closes a descriptor of `lock.mdb` kept by a compaction (nothing for -1).
func closeLockFile(_ descriptor: Int32) {
    if descriptor >= 0 { closeFile(descriptor) }
}
