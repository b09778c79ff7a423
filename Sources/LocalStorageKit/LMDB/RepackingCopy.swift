import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Copies an environment into a new one whose every tree is packed full: each database is read in key order
/// and appended (`MDB_APPEND`, `MDB_APPENDDUP` for the duplicates of a key), so the copy's pages are filled
/// one after another.
///
/// `mdb_env_copy2(…, MDB_CP_COMPACT)` leaves out the free pages but keeps every tree page as it is, and LMDB
/// never merges pages that deletes left nearly empty: a store that grew to 40,000 records and shrank to 4,000
/// kept 3,700 leaves of records, one record a leaf, and a file five times the size of a fresh store holding the
/// same records (a new-user trial, /work/trial81.md F1). The copy holds the same keys and values in every
/// database, the main database's own entries included, with each database's flags.
enum RepackingCopy {
    /// How many entries, and about how many bytes, one transaction of the copy writes at most: each commits its
    /// dirty pages, which LMDB keeps in memory until then (its dirty list has room for 128 Ki pages, 512 MiB; a
    /// large record takes as many overflow pages as its size needs). A few MiB keep a compaction at open light on
    /// a phone; each commit leaves a few pages free in the copy.
    static let entriesPerTransaction = 20_000
    static let bytesPerTransaction = 8 << 20
    /// What a copy's map needs beyond the pages the source uses: the pages its commits leave free and the two
    /// meta pages, with room to spare.
    static let slack = 64 << 20

    /// Copies the environment `source` into a new environment in the file at `path` (empty or absent; created
    /// with `fileMode`), of a map of `mapSize` bytes, and syncs it. The file is left closed.
    ///
    /// - Throws: ``LMDBError`` of the call that failed; the file at `path` is then incomplete.
    static func copy(
        from source: OpaquePointer, toFile path: String, mapSize: Int, fileMode: Int,
        entriesPerTransaction: Int = entriesPerTransaction, bytesPerTransaction: Int = bytesPerTransaction
    ) throws {
        var created: OpaquePointer?
        try check(mdb_env_create(&created), "mdb_env_create")
        guard let target = created else { throw LMDBError(code: ENOMEM, call: "mdb_env_create", caller: #function) }
        defer { mdb_env_close(target) }
        try check(mdb_env_set_maxdbs(target, Environment.maxDatabases), "mdb_env_set_maxdbs")
        try check(mdb_env_set_mapsize(target, Environment.rounded(mapSize)), "mdb_env_set_mapsize")
        // No lock file (the caller holds the store's locks) and no sync per commit: one sync at the end.
        let flags = UInt32(MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC | MDB_NOTLS)
        try check(path.withCString { mdb_env_open(target, $0, flags, mode_t(fileMode)) }, "mdb_env_open")

        var reading: OpaquePointer?
        try check(mdb_txn_begin(source, nil, UInt32(MDB_RDONLY), &reading), "mdb_txn_begin")
        guard let snapshot = reading else { throw LMDBError(code: ENOMEM, call: "mdb_txn_begin", caller: #function) }
        // Handles opened in a read transaction close when it ends: after the copy.
        defer { mdb_txn_abort(snapshot) }
        var writer = Appender(
            environment: target, entriesPerTransaction: entriesPerTransaction, bytesPerTransaction: bytesPerTransaction)
        defer { writer.abort() }
        var main: MDB_dbi = 0
        try check(mdb_dbi_open(snapshot, nil, 0, &main), "mdb_dbi_open")
        var databases: [(name: [UInt8], handle: MDB_dbi, flags: UInt32)] = []
        try forEach(in: snapshot, database: main) { key, value in
            let name = Array(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size))
            if let handle = try openDatabase(named: name, in: snapshot) {
                var databaseFlags: UInt32 = 0
                try check(mdb_dbi_flags(snapshot, handle, &databaseFlags), "mdb_dbi_flags")
                databases.append((name, handle, databaseFlags))
            } else {
                // The main database's own entry (not a database's name): copied as it is.
                try writer.put(key, value, database: try writer.mainDatabase(), flags: 0)
            }
        }
        for database in databases {
            let keptFlags =
                database.flags
                & UInt32(
                    MDB_REVERSEKEY | MDB_DUPSORT | MDB_INTEGERKEY | MDB_DUPFIXED | MDB_INTEGERDUP | MDB_REVERSEDUP)
            let target = try writer.createDatabase(named: database.name, flags: keptFlags)
            let sorted = database.flags & UInt32(MDB_DUPSORT) != 0
            var previous: [UInt8]?
            var copied = 0
            try forEach(in: snapshot, database: database.handle) { key, value in
                copied += 1
                let keyBytes = UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)
                // A further duplicate of the key just written goes after it; any other key after every key.
                let sameKey = sorted && previous.map { $0.elementsEqual(keyBytes) } == true
                try writer.put(key, value, database: target, flags: UInt32(sameKey ? MDB_APPENDDUP : MDB_APPEND))
                if sorted && !sameKey { previous = Array(keyBytes) }
            }
            // Every entry LMDB counts in the snapshot was copied (a walk cut short would leave a store missing
            // records, and the swap would make it the store).
            var stat = MDB_stat()
            try check(mdb_stat(snapshot, database.handle, &stat), "mdb_stat")
            guard stat.ms_entries == copied else {
                throw LMDBError(code: MDB_CORRUPTED, call: "mdb_stat", caller: #function)
            }
        }
        try writer.commit()
        try check(mdb_env_sync(target, 1), "mdb_env_sync")
    }

    /// Opens the database named `name` in `txn`, or returns nil when the main database's entry of that name is
    /// not a database (`MDB_INCOMPATIBLE`) or the name cannot be one (it holds a NUL byte).
    private static func openDatabase(named name: [UInt8], in txn: OpaquePointer) throws -> MDB_dbi? {
        guard !name.contains(0) else { return nil }
        var handle: MDB_dbi = 0
        let code = open(named: name, flags: 0, in: txn, handle: &handle)
        if code == MDB_INCOMPATIBLE { return nil }
        try check(code, "mdb_dbi_open")
        return handle
    }

    /// `mdb_dbi_open` of the database `name` (bytes without a NUL) with `flags`; returns LMDB's code.
    fileprivate static func open(
        named name: [UInt8], flags: UInt32, in txn: OpaquePointer, handle: inout MDB_dbi
    ) -> Int32 {
        (name + [0]).withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { mdb_dbi_open(txn, $0.baseAddress, flags, &handle) }
        }
    }

    /// Calls `body` with every entry of `database` in `txn`, in order (each duplicate of a sorted key).
    private static func forEach(
        in txn: OpaquePointer, database: MDB_dbi, _ body: (MDB_val, MDB_val) throws -> Void
    ) throws {
        var opened: OpaquePointer?
        try check(mdb_cursor_open(txn, database, &opened), "mdb_cursor_open")
        guard let cursor = opened else { throw LMDBError(code: ENOMEM, call: "mdb_cursor_open", caller: #function) }
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while code == MDB_SUCCESS {
            try body(key, value)
            code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        if code != MDB_NOTFOUND { try check(code, "mdb_cursor_get") }
    }

    /// The copy's write transactions: one is begun when something is written, and committed after
    /// ``entriesPerTransaction`` entries or ``bytesPerTransaction`` bytes and at the end; one left open is aborted
    /// by ``abort()``.
    private struct Appender {
        let environment: OpaquePointer
        private var txn: OpaquePointer?
        private var written = 0
        private var writtenBytes = 0

        let entriesPerTransaction: Int
        let bytesPerTransaction: Int

        init(environment: OpaquePointer, entriesPerTransaction: Int, bytesPerTransaction: Int) {
            self.environment = environment
            self.entriesPerTransaction = entriesPerTransaction
            self.bytesPerTransaction = bytesPerTransaction
        }

        private mutating func current() throws -> OpaquePointer {
            if let txn { return txn }
            var begun: OpaquePointer?
            try check(mdb_txn_begin(environment, nil, 0, &begun), "mdb_txn_begin")
            guard let begun else { throw LMDBError(code: ENOMEM, call: "mdb_txn_begin", caller: #function) }
            txn = begun
            return begun
        }

        /// Creates the database `name` with `flags` in the copy, in the transaction its first entries go in (a
        /// commit per database would leave the pages each commit replaced free in the copy); the handle stays
        /// valid once that transaction commits.
        mutating func createDatabase(named name: [UInt8], flags: UInt32) throws -> MDB_dbi {
            let txn = try current()
            var handle: MDB_dbi = 0
            try check(
                RepackingCopy.open(named: name, flags: flags | UInt32(MDB_CREATE), in: txn, handle: &handle),
                "mdb_dbi_open")
            return handle
        }

        /// The copy's main database (the unnamed one, which names the others).
        mutating func mainDatabase() throws -> MDB_dbi {
            var handle: MDB_dbi = 0
            try check(mdb_dbi_open(try current(), nil, 0, &handle), "mdb_dbi_open")
            return handle
        }

        mutating func put(_ key: MDB_val, _ value: MDB_val, database: MDB_dbi, flags: UInt32) throws {
            var key = key
            var value = value
            try check(mdb_put(try current(), database, &key, &value, flags), "mdb_put")
            written += 1
            writtenBytes += key.mv_size + value.mv_size
            if written >= entriesPerTransaction || writtenBytes >= bytesPerTransaction {
                try commit()
            }
        }

        /// Commits what is written (a commit that fails has ended its transaction all the same).
        mutating func commit() throws {
            guard let ending = txn else { return }
            txn = nil
            written = 0
            writtenBytes = 0
            try check(mdb_txn_commit(ending), "mdb_txn_commit")
        }

        /// Ends a transaction left open by a failure, writing nothing of it.
        mutating func abort() {
            if let ending = txn { mdb_txn_abort(ending) }
            txn = nil
        }
    }
}
