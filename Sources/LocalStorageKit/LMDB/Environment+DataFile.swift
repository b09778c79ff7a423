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
        var descriptor: Int32 = -1
        try check(mdb_env_get_fd(handle, &descriptor), "mdb_env_get_fd")
        var pages = DataFilePages(descriptor: descriptor)
        let (meta, problems) = DataFileWalk.newestMeta(&pages, transactionID: UInt64(txn.id))
        guard let meta else { return problems }
        var walk = DataFileWalk(pages: pages, meta: meta)
        walk.run()
        return walk.problems
    }
}
