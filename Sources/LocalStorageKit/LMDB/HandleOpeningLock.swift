#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps the transactions of this process that may open new database handles one at a time.
///
/// `mdb_dbi_open` writes the environment's shared handle table, and LMDB requires that a transaction
/// which opened a new handle end before another transaction of the process opens one. Every write
/// transaction holds this lock from begin to end (the writer thread's, which open the databases of types,
/// policies and leases); a type's registration in a read transaction
/// (``Environment/readOpeningHandles(_:)``) runs only when it can take the lock at once.
final class HandleOpeningLock: @unchecked Sendable {
    // @unchecked: the mutex is heap-allocated, never moved, and only used through pthread calls.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` holding the lock, waiting for it if another thread holds it.
    @inline(__always)
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Runs `body` holding the lock if no thread holds it now; otherwise returns nil without running it.
    func withLockIfAvailable<R>(_ body: () throws -> R?) rethrows -> R? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
