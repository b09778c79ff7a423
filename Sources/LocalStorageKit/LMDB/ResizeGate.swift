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
        lockShared()
        defer { unlockShared() }
        return try body()
    }

    /// Runs `body`, which begins no transaction, while holding the gate shared: unlike ``withShared(_:)`` it
    /// keeps no count of the thread's holds (a read of the meta pages on every memory-tier hit).
    @inline(__always)
    func withSharedLeaf<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Takes the gate shared; pair with ``unlockShared()``.
    @inline(__always)
    func lockShared() {
        pthread_rwlock_rdlock(lock)
        Self.adjustHolds(by: 1)
    }

    /// Releases a shared hold taken with ``lockShared()``.
    @inline(__always)
    func unlockShared() {
        Self.adjustHolds(by: -1)
        pthread_rwlock_unlock(lock)
    }

    /// Whether the calling thread holds a gate shared (it is inside a transaction): then it may begin another
    /// read transaction without taking the gate again, which could wait forever behind a resize that waits
    /// for this thread's own hold (writers are preferred and the lock is not recursive).
    static var isHeldByThisThread: Bool { pthread_getspecific(holdsKey) != nil }

    /// How many shared holds the calling thread has (of any gate), as the thread-specific value's address.
    private static let holdsKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    @inline(__always)
    private static func adjustHolds(by delta: Int) {
        let holds = Int(bitPattern: pthread_getspecific(holdsKey)) + delta
        pthread_setspecific(holdsKey, UnsafeRawPointer(bitPattern: holds))
    }

    /// Runs `body` while no other transaction of this process is open.
    func withExclusive<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
