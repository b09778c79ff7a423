import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a store directory's files are in use, by this process or another, before they are replaced
/// or removed.
enum StoreInUse {
    /// Throws when a store of this process has `directory` open, or another process holds LMDB's lock on
    /// its `lock.mdb` (every process with the environment open holds a shared lock on its first byte).
    ///
    /// - Parameter hint: What to do instead, said after the reason.
    /// - Throws: ``LocalStorageError/storageError(code:message:)`` with `EBUSY`.
    static func check(_ directory: URL, doing what: String, hint: String? = nil) throws {
        let hint = hint.map { "; \($0)" } ?? ""
        if EnvironmentRegistry.isOpen(directory) {
            throw LocalStorageError.storageError(
                code: EBUSY,
                message: "cannot \(what) \(directory.path): this process has the store open; close it first\(hint)")
        }
        let lockFile = directory.appendingPathComponent("lock.mdb").path
        let descriptor = open(lockFile, O_RDWR)
        guard descriptor >= 0 else { return }  // No lock file (or not ours to write): nobody registered in it.
        defer { close(descriptor) }
        var lock = LMDBLockFile.firstByte(F_WRLCK)
        guard fcntl(descriptor, F_GETLK, &lock) == 0 else {
            throw LocalStorageError.storageError(
                code: errno, message: "cannot \(what) \(directory.path): its lock file cannot be checked")
        }
        if lock.l_type != Int16(F_UNLCK) {
            throw LocalStorageError.storageError(
                code: EBUSY,
                message:
                    "cannot \(what) \(directory.path): another process (pid \(lock.l_pid)) has the store open\(hint)")
        }
    }
}
