import Foundation

/// Keeps the transactions of this process that may open new database handles one at a time.
///
/// `mdb_dbi_open` writes the environment's shared handle table, and LMDB requires that a transaction
/// which opened a new handle end before another transaction of the process opens one. Every write
/// transaction holds this lock from begin to end (the writer thread's, which open the databases of types,
/// policies and leases); a type's registration in a read transaction
/// (``Environment/readOpeningHandles(_:)``) runs only when it can take the lock at once.
final class HandleOpeningLock: Sendable {
    private let lock = NSLock()

    /// Runs `body` holding the lock, waiting for it if another thread holds it.
    @inline(__always)
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Runs `body` holding the lock if no thread holds it now; otherwise returns nil without running it.
    func withLockIfAvailable<R>(_ body: () throws -> R?) rethrows -> R? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        return try body()
    }
}
