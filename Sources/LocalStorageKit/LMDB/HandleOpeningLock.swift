import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps the transactions of this process that may open new database handles one at a time.
///
/// `mdb_dbi_open` writes the environment's shared handle table, and LMDB requires that a transaction
/// which opened a new handle end before another transaction of the process opens one. Every write
/// transaction holds this lock from begin to end (the writer thread's, which open the databases of types,
/// policies and leases), and so does a compacting copy. A read transaction that opens handles (a type's
/// registration at its first use, an open's first look: ``Environment/readOpeningHandles(_:)``) takes it only
/// while no write holds it or waits for it: a write may wait for another process's write transaction for
/// as long as that one lasts, and a read must not wait behind it. Another read that holds it ends soon, and
/// is waited for (several first uses of a type at once all registered through the writer, and so waited for
/// another process's write: trial94 #1).
final class HandleOpeningLock: Sendable {
    private struct State {
        /// Who holds the lock.
        var holder = Holder.none
        /// The thread of the read holding it (a read that asks again on that thread is refused, not deadlocked).
        var readingThread: pthread_t?
        /// Writes waiting for the lock: a read asking now gives way to them.
        var writesWaiting = 0
        /// How many times a read waited for another read (tests).
        var readsWaited = 0
    }

    private enum Holder {
        case none, read, write
    }

    private let condition = NSCondition()
    private nonisolated(unsafe) var state = State()

    /// Runs `body` holding the lock, waiting for it if another thread holds it (a write transaction, a copy).
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        condition.lock()
        state.writesWaiting += 1
        while state.holder != .none { condition.wait() }
        state.writesWaiting -= 1
        state.holder = .write
        condition.unlock()
        defer { release() }
        return try body()
    }

    /// Runs `body` holding the lock unless a write holds it or waits for it (then returns nil without running
    /// it); waits while another read holds it, if `waitingForReads` (a thread inside a transaction of the store
    /// does not wait: it holds the resize gate, which the holder may need while a resize waits for it).
    func withLockIfAvailable<R>(waitingForReads: Bool = true, _ body: () throws -> R?) rethrows -> R? {
        condition.lock()
        while waitingForReads, state.holder == .read, state.writesWaiting == 0,
            let thread = state.readingThread, pthread_equal(thread, pthread_self()) == 0
        {
            state.readsWaited += 1
            condition.wait()
        }
        guard state.holder == .none, state.writesWaiting == 0 else {
            condition.unlock()
            return nil
        }
        state.holder = .read
        state.readingThread = pthread_self()
        condition.unlock()
        defer { release() }
        return try body()
    }

    /// Writes waiting for the lock now, and how many times a read waited for another (tests).
    var waits: (writes: Int, reads: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (state.writesWaiting, state.readsWaited)
    }

    private func release() {
        condition.lock()
        state.holder = .none
        state.readingThread = nil
        condition.broadcast()
        condition.unlock()
    }
}
