import CLMDB
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// LMDB's exclusive lock on a store (the write lock on the first byte of `lock.mdb`), held while a
/// maintenance command puts a new data file in the old one's place (`verify --repair`).
///
/// Every process with the store open holds a read lock on that byte, so taking the lock proves nobody has it
/// open, and holding it makes a process that opens the store meanwhile wait in LMDB's open: without it, that
/// process mapped the old file, which the swap then renamed away, and its writes were lost. After the swap,
/// ``swapped(mode:)`` opens the store in this process, which finds itself alone (the lock is its own) and sets
/// the lock file up afresh for the new file, so that the waiting process does not read the old file's
/// transaction number from it; the lock goes when the descriptor closes.
final class StoreSwapLock {
    private var descriptor: Int32
    private let directory: String

    /// Takes the lock, creating `lock.mdb` (with `mode`) when the store has none.
    ///
    /// - Throws: `storageError` with `EBUSY` when a process has the store open.
    init(directory: URL, mode: mode_t?) throws {
        self.directory = directory.path
        let path = directory.appendingPathComponent("lock.mdb").path
        let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC, mode ?? 0o600)
        guard opened >= 0 else {
            throw LocalStorageError.storageError(
                code: errno, message: "cannot open \(path) to lock the store: \(String(cString: strerror(errno)))")
        }
        if let who = LMDBLockFile.takeWriteLock(opened) {
            close(opened)
            throw LocalStorageError.storageError(
                code: EBUSY, message: "cannot repair \(directory.path): \(who) has the store open")
        }
        descriptor = opened
    }

    deinit { release() }

    /// After the new data file took the old one's name: makes the rename durable, sets the lock file up for
    /// the new file (see the type's documentation), and lets go of the lock. The lock file is emptied first,
    /// while the lock is held (a waiting process maps it only once it has the lock): the open here sets it up
    /// afresh; when that open fails, a process waiting to open fails to open (and opens at its next try,
    /// alone) rather than trusting the old file's numbers. (A failed open may close LMDB's descriptor of the
    /// lock file, which drops this process's locks on it: nothing is done to the file after it.)
    func swapped(mode: Int) {
        guard descriptor >= 0 else { return }
        LMDBLockFile.syncFolder(directory)
        var size = stat()
        let dataSize = stat(directory + "/data.mdb", &size) == 0 ? Int(size.st_size) : 0
        guard ftruncate(descriptor, 0) == 0 else {
            release()  // The lock file keeps the old numbers; LMDB's next lone opener resets it.
            return
        }
        do {
            let handle = try Environment.openHandle(
                directory: directory, mapSize: max(dataSize, 1 << 20), durability: .none, readOnly: true,
                withoutLock: false, fileMode: mode)
            mdb_env_close(handle)
        } catch {
            // The emptied lock file stays empty: see above.
        }
        release()
    }

    /// Lets go of the lock (closing any descriptor of the file drops this process's locks on it).
    func release() {
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
    }
}
