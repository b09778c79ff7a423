import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Environment {
    /// The bytes of LMDB's lock file before its reader slots (`MDB_txninfo` with one slot, on x86-64 Linux with
    /// process-shared mutexes), and the bytes of each further slot (`MDB_reader`, a cache line). A header a few
    /// cache lines longer elsewhere (aarch64) still lies in the last block reserved: blocks are whole pages.
    static let lockFileHeaderBytes = 192
    static let lockFileSlotBytes = 64

    /// Creates the lock file of a store that has none yet with real blocks, before LMDB maps it, and returns
    /// `MDB_SUCCESS`, or `ENOSPC` when the disk has none to give (Linux). LMDB sizes a new lock file with `ftruncate`
    /// (a sparse file) and writes its reader table through the map: on a disk without a free block that write ended
    /// the process with SIGBUS instead of an error (a failure-injection trial, /work/trial59.md).
    ///
    /// Only a file this call creates is touched: closing any descriptor of a file drops every `fcntl` lock the
    /// process holds on it, and a repair's swap and a compaction hold LMDB's own lock on an existing lock file
    /// across the open. A file it created but could not give blocks to is removed again, so that the next open
    /// does not meet a sparse one. An existing lock file is left to LMDB, as before.
    static func reserveLockFile(directory: String, fileMode: Int) -> Int32 {
        #if os(Linux)
        let path = file("lock.mdb", in: directory)
        let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(fileMode))
        guard descriptor >= 0 else { return MDB_SUCCESS }  // There already, or not ours to create: LMDB's.
        let needed = lockFileHeaderBytes + (Int(maxReaders) - 1) * lockFileSlotBytes
        let code = posix_fallocate(descriptor, 0, off_t(needed))
        Glibc.close(descriptor)
        guard code == ENOSPC || code == EDQUOT else { return MDB_SUCCESS }
        unlink(path)
        return ENOSPC
        #else
        return MDB_SUCCESS
        #endif
    }

    /// A read-only descriptor of the store's `lock.mdb` for ``othersHaveItOpen()``, or -1. Opened after LMDB has
    /// the file open: opening takes nothing from LMDB's locks (closing would, which is why it lives as long as the
    /// environment).
    static func openLockProbe(directory: String) -> Int32 {
        openFile(file("lock.mdb", in: directory), O_RDONLY | O_CLOEXEC)
    }

    /// Whether another process has this environment open, whatever program or version it is: every process with an
    /// LMDB environment open holds LMDB's shared lock on the first byte of `lock.mdb` (``LMDBLockFile``). True when
    /// it cannot tell.
    func othersHaveItOpen() -> Bool {
        heldLockFile < 0 || LMDBLockFile.otherHolder(heldLockFile) != nil
    }

    /// The path of the file `name` in the store directory `directory`.
    static func file(_ name: String, in directory: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
