import Foundation
import Testing

@testable import LocalStorageKit

/// The lock that keeps transactions opening database handles one at a time: a read waits for another read
/// (several first uses of a type at once went to the writer, which waited for another process's write:
/// trial94 #1), gives way to a write that holds or awaits it, and is refused on the thread that holds it.
@Suite struct HandleOpeningLockTests {
    /// Runs `body` on a thread of its own; its result comes back through the returned task.
    private func onThread<R: Sendable>(_ body: @escaping @Sendable () -> R) -> Task<R, any Error> {
        Task { try await offThePool(body) }
    }

    @Test func aReadWaitsForAnotherReadAndThenOpensItsHandles() async throws {
        let lock = HandleOpeningLock()
        let (entered, release) = (CallCounter(), DispatchSemaphore(value: 0))
        let first = onThread {
            lock.withLockIfAvailable { () -> String? in
                entered.increment()
                release.wait()
                return "first"
            }
        }
        try await waitUntil("the first read holds the lock", seconds: 60) { entered.value == 1 }
        // A read inside a transaction of the store (it holds the resize gate) does not wait.
        let inside = try await onThread { lock.withLockIfAvailable(waitingForReads: false) { () -> String? in "no" } }
            .value
        #expect(inside == nil)
        let second = onThread { lock.withLockIfAvailable { () -> String? in "second" } }
        try await waitUntil("the second read waits for the first", seconds: 60) { lock.waits.reads == 1 }
        release.signal()
        #expect(try await first.value == "first")
        #expect(try await second.value == "second")
    }

    @Test func aReadGivesWayToAWriteThatWaitsAndIsRefusedOnItsOwnThread() async throws {
        let lock = HandleOpeningLock()
        let (entered, release) = (CallCounter(), DispatchSemaphore(value: 0))
        let order = Totals()
        let read = onThread {
            lock.withLockIfAvailable { () -> Bool? in
                entered.increment()
                // Asked again on the thread that holds it: refused at once, not a deadlock.
                let again = lock.withLockIfAvailable { () -> Bool? in true }
                release.wait()
                order.append(1)
                return again == nil
            }
        }
        try await waitUntil("the first read holds the lock", seconds: 60) { entered.value == 1 }
        let write = onThread { lock.withLock { order.append(2) } }
        try await waitUntil("the write waits for the read", seconds: 60) { lock.waits.writes == 1 }
        // A write waits: a read asking now does not queue before it (it would wait as long as the write does).
        let refused = try await onThread { lock.withLockIfAvailable { () -> Int? in 3 } }.value
        #expect(refused == nil)
        release.signal()
        #expect(try await read.value == true)
        try await write.value
        #expect(order.values == [1, 2])
        #expect(lock.waits.reads == 0)
    }
}
