#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A shared/exclusive gate around every transaction of this process.
///
/// LMDB allows `mdb_env_set_mapsize` only while this process has no transaction open. Every
/// transaction holds the gate shared for its (synchronous) lifetime; growing or adopting a new map
/// size holds it exclusively. Writers are preferred so that a stream of reads cannot starve a resize.
final class ResizeGate: @unchecked Sendable {
    // @unchecked: the rwlock is heap-allocated, never moved, and only used through pthread calls.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        #if os(Linux)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` while holding the gate shared (a transaction is open).
    @inline(__always)
    func withShared<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Takes the gate shared; pair with ``unlockShared()``.
    @inline(__always)
    func lockShared() { pthread_rwlock_rdlock(lock) }

    /// Releases a shared hold taken with ``lockShared()``.
    @inline(__always)
    func unlockShared() { pthread_rwlock_unlock(lock) }

    /// Runs `body` while no other transaction of this process is open.
    func withExclusive<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
