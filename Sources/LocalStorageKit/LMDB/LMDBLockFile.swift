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

    /// Takes the write lock on the first byte of the lock file open as `descriptor` (no process has the store
    /// open then); nil when taken, else who holds a lock there ("another process (pid N)").
    static func takeWriteLock(_ descriptor: Int32) -> String? {
        var lock = firstByte(F_WRLCK)
        guard fcntl(descriptor, F_SETLK, &lock) != 0 else { return nil }
        let pid = otherHolder(descriptor) ?? 0
        return pid > 0 ? "another process (pid \(pid))" : "another process"
    }

    /// The process id of another process that holds a lock on the first byte (`F_GETLK` reports other processes'
    /// locks only, never this one's): 0 when it cannot be told, nil when none does.
    static func otherHolder(_ descriptor: Int32) -> pid_t? {
        var holder = firstByte(F_WRLCK)
        guard fcntl(descriptor, F_GETLK, &holder) == 0 else { return 0 }
        return holder.l_type != Int16(F_UNLCK) ? holder.l_pid : nil
    }

    /// `fsync`s the folder at `path` after a rename into it. Best effort: the rename is done, and a folder that
    /// cannot be synced only leaves the new name's durability to the file system.
    static func syncFolder(_ path: String) {
        let folder = open(path, O_RDONLY | O_CLOEXEC)
        guard folder >= 0 else { return }
        _ = fsync(folder)
        close(folder)
    }
}
