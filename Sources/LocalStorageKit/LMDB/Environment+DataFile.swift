import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Environment {
    /// The size in bytes of the open data file (`mdb_env_get_fd`, `fstat`).
    ///
    /// - Throws: ``LMDBError`` when the descriptor or its size cannot be read.
    func dataFileSize() throws -> Int {
        var descriptor: Int32 = -1
        try check(mdb_env_get_fd(handle, &descriptor), "mdb_env_get_fd")
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw LMDBError(code: errno, call: "fstat", caller: #function)
        }
        return Int(info.st_size)
    }

    /// The problems ``DataFileWalk`` finds in the snapshot `txn` reads: every database and page reference.
    func pageProblems(in txn: Transaction) throws -> [DataFileWalk.Problem] {
        let (walk, problems) = try walkSnapshot(of: txn)
        guard let walk else { return problems }
        // Of the meta pages' problems only a tie matters while one is usable: the two commits pass for one.
        return problems.filter { $0 == DataFileWalk.metaTie(walk.meta.transactionID) } + walk.problems
    }

    /// Checks in `txn`'s snapshot every page of the databases `chosen` picks (their sorted duplicates'
    /// sub-trees included), the main and free-page databases and the root page of every other database: what
    /// a command runs before it reads whole databases through LMDB, which trusts its pages (a damaged page
    /// deep in a tree can make it read outside the map and end the process).
    ///
    /// Complexity: O(pages of the chosen databases, the main and the free-page databases), read with `pread`.
    /// - Throws: ``DamagedDataFile`` naming the first problem.
    func checkPages(of chosen: @escaping (String) -> Bool, in txn: Transaction) throws {
        let (walk, problems) = try walkSnapshot(of: txn) { $0.walks = chosen }
        // A damaged meta page matters only when neither can be used (LMDB reads the other one).
        let found = walk?.problems ?? problems
        if let first = found.first { throw DamagedDataFile(problem: "\(first)") }
        if walk == nil { throw DamagedDataFile(problem: "neither meta page can be used") }
    }

    /// The pages of each database of `txn`'s snapshot that `databases` chooses, by name, sub-trees of sorted
    /// duplicates included (counted from their records, not walked), and the records of every named database;
    /// nil when the walk finds the pages it reads damaged.
    ///
    /// Complexity: O(pages of the chosen databases' own trees), read with `pread`.
    func pageTotals(
        in txn: Transaction, of databases: @escaping (String) -> Bool
    ) throws -> (totals: [String: DataFileWalk.PageTotals], records: [String: DatabaseRecord])? {
        let (walk, _) = try walkSnapshot(of: txn) { walk in
            walk.walks = databases
            walk.countsSubTreesFromRecords = true
        }
        guard let walk, walk.problems.isEmpty else { return nil }
        return (walk.pageTotals, walk.databases)
    }

    /// A ``DataFileWalk`` of `txn`'s snapshot, set up by `configure` and run; nil with the problems when
    /// neither meta page can be used.
    private func walkSnapshot(
        of txn: Transaction, _ configure: (inout DataFileWalk) -> Void = { _ in }
    ) throws -> (DataFileWalk?, [DataFileWalk.Problem]) {
        var descriptor: Int32 = -1
        try check(mdb_env_get_fd(handle, &descriptor), "mdb_env_get_fd")
        var pages = DataFilePages(descriptor: descriptor)
        let (meta, problems) = DataFileWalk.newestMeta(&pages, transactionID: UInt64(UInt(bitPattern: txn.id)))
        guard let meta else { return (nil, problems) }
        var walk = DataFileWalk(pages: pages, meta: meta)
        configure(&walk)
        walk.run()
        return (walk, problems)
    }

    /// Empties `directory`'s `data.mdb` when it is what an interrupted creation leaves: shorter than two
    /// meta pages, and either too short to hold one meta page or holding a meta page with LMDB's magic
    /// number and transaction id 0 (nothing committed). Returns whether it did.
    static func emptyUnfinishedDataFile(directory: String) -> Bool {
        let dataPath = Environment.file("data.mdb", in: directory)
        let fd = openFile(dataPath, O_RDWR)
        guard fd >= 0 else { return false }
        defer { closeFile(fd) }
        var file = stat()
        guard fstat(fd, &file) == 0 else { return false }
        // LMDB's meta page: a 16-byte page header, then MDB_meta: magic (UInt32) at 16, the page size in
        // the free database's md_pad at 40, the transaction id at 144.
        let header = 152
        let length = Int(file.st_size)
        guard length >= header else { return false }
        var bytes = [UInt8](repeating: 0, count: header)
        guard pread(fd, &bytes, header, 0) == header else { return false }
        func load32(_ offset: Int) -> UInt32 {
            bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
        }
        func load64(_ offset: Int) -> UInt64 {
            bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        }
        let pageSize = Int(load32(40))
        guard load32(16) == 0xBEEF_C0DE, load64(144) == 0, pageSize >= 512,
            length < 2 * pageSize
        else { return false }
        return ftruncate(fd, 0) == 0
    }
}

/// `open(2)` and `close(2)`, out of reach of ``Environment``'s own `close()`.
func openFile(_ path: String, _ flags: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.open(path, flags)
    #else
    Darwin.open(path, flags)
    #endif
}

func closeFile(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}
