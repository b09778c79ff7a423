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
}
