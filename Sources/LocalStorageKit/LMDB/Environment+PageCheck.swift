import CLMDB

extension Environment {
    /// Checks, before LMDB reads any tree, what every read and write of the store needs: the meta page of
    /// the newest commit, the free-page database and its lists, the main database and the root page of
    /// each database it names (``DataFileWalk`` with `shallow`). Cost: the pages of the main and free-page
    /// databases, plus one page per named database.
    ///
    /// - Throws: ``DamagedDataFile`` naming the first problem.
    static func checkPages(_ raw: OpaquePointer) throws {
        var descriptor: Int32 = -1
        guard mdb_env_get_fd(raw, &descriptor) == MDB_SUCCESS, descriptor >= 0 else { return }
        // A read transaction pins the snapshot: its pages are not reused while the walk reads them.
        var txn: OpaquePointer?
        try check(mdb_txn_begin(raw, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        defer { mdb_txn_abort(txn) }
        var pages = DataFilePages(descriptor: descriptor)
        let (meta, problems) = DataFileWalk.newestMeta(&pages, transactionID: UInt64(mdb_txn_id(txn)))
        guard let meta else {
            throw DamagedDataFile(problem: problems.first.map(String.init(describing:)) ?? "no usable meta page")
        }
        var walk = DataFileWalk(pages: pages, meta: meta)
        walk.shallow = true
        walk.run()
        if let first = walk.problems.first { throw DamagedDataFile(problem: "\(first)") }
    }
}
