#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// LMDB's lock file, `lock.mdb`: every process with the environment open holds an `fcntl` read lock on its
/// first byte (LMDB's `mdb_env_excl_lock`), so a write lock there is granted only to a process alone.
enum LMDBLockFile {
    /// An `fcntl` lock request of `type` (`F_RDLCK`, `F_WRLCK`) on the first byte.
    static func firstByte(_ type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        return lock
    }
}
