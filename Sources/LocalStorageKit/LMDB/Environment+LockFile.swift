import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Environment {
    /// The bytes of LMDB's lock file before its reader slots (`MDB_txninfo` with one slot, on Linux with process-shared
    /// mutexes), and the bytes of each further slot (`MDB_reader`, a cache line).
    static let lockFileHeaderBytes = 192
    static let lockFileSlotBytes = 64

    /// Gives the lock file real blocks before LMDB maps it, and returns `MDB_SUCCESS`, or `ENOSPC` when the disk has
    /// none to give (Linux). LMDB sizes a new lock file with `ftruncate` (a sparse file) and writes its reader table
    /// through the map: on a disk without a free block that write ended the process with SIGBUS instead of an error
    /// (a failure-injection trial, /work/trial59.md). A lock file this process cannot open for writing (a read-only
    /// folder) is left to LMDB, which reports it.
    static func reserveLockFile(directory: String, fileMode: Int) -> Int32 {
        #if os(Linux)
        let path = directory.hasSuffix("/") ? directory + "lock.mdb" : directory + "/lock.mdb"
        let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, mode_t(fileMode))
        guard descriptor >= 0 else { return MDB_SUCCESS }
        defer { Glibc.close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return MDB_SUCCESS }
        let needed = lockFileHeaderBytes + (Int(maxReaders) - 1) * lockFileSlotBytes
        // Blocks already there cost nothing to reserve again (a sparse file left by an earlier failed open has none).
        let code = posix_fallocate(descriptor, 0, off_t(max(Int(info.st_size), needed)))
        return code == ENOSPC || code == EDQUOT ? ENOSPC : MDB_SUCCESS
        #else
        return MDB_SUCCESS
        #endif
    }
}
