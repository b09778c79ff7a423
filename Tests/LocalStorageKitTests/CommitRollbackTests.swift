import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// A request's rollback hooks (``CommitQueue/Context/onAbort(_:)``): state a request changes outside its
/// transaction must not outlive an attempt that left nothing in the store (review-64 #2, #3).
@Suite struct CommitRollbackTests {
    /// A peer that throws aborts the batch: the request's first attempt is rolled back before it runs again
    /// and commits.
    @Test func aRequestReplayedAfterAPeerThrewRollsBackItsFirstAttempt() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let ran = CallCounter()
        let aborted = CallCounter()
        let committed = CallCounter()
        let ranBeforeRollback = CallCounter()
        let hold = try await WriterHold(storage)
        let request = Task {
            try await storage.core.writer.perform { context in
                // Each attempt sees the state the one before it left: rolled back by then.
                if ran.value != aborted.value { ranBeforeRollback.increment() }
                ran.increment()
                context.onAbort { aborted.increment() }
                context.onCommit { committed.increment() }
            }
        }
        try await waitUntil("the request is queued") { storage.core.writer.queuedCount == 1 }
        let peer = Task { try await storage.core.writer.perform { _ in throw ShopError.soldOut(sku: "peer") } }
        try await waitUntil("the peer is queued") { storage.core.writer.queuedCount == 2 }
        try await hold.release()
        try await request.value
        await #expect(throws: (any Error).self) { try await peer.value }
        #expect(ran.value == 2)
        #expect(ranBeforeRollback.value == 0)
        #expect(aborted.value == 1)
        #expect(committed.value == 1)
    }

    /// A batch that cannot commit at all (the map is at `maxMapSize`) rolls back every attempt, and never
    /// runs a commit hook.
    @Test func aBatchThatCannotCommitRollsBackEveryAttempt() async throws {
        var configuration = diskConfiguration()
        configuration.mapSize = 1 << 20
        configuration.maxMapSize = 1 << 20
        let storage = try LocalStorage(configuration: configuration)
        let meta = storage.core.meta
        let ran = CallCounter()
        let aborted = CallCounter()
        let committed = CallCounter()
        await #expect(throws: LocalStorageError.storageFull) {
            try await storage.core.writer.perform { context in
                ran.increment()
                context.onAbort { aborted.increment() }
                context.onCommit { committed.increment() }
                try context.txn.put(meta, key: Array("test.big".utf8), value: [UInt8](repeating: 7, count: 2 << 20))
            }
        }
        #expect(ran.value >= 1)
        #expect(aborted.value == ran.value)
        #expect(committed.value == 0)
    }

    /// A closure that threw in a group of nested transactions is rolled back alone; its peer commits and keeps
    /// its state.
    @Test func aClosureThatThrowsAmongOthersIsRolledBackAlone() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let (failingAborted, failingCommitted) = (CallCounter(), CallCounter())
        let (keptAborted, keptCommitted) = (CallCounter(), CallCounter())
        let hold = try await WriterHold(storage)
        let failing = Task {
            try await storage.core.writer.performOnce { context in
                context.onAbort { failingAborted.increment() }
                context.onCommit { failingCommitted.increment() }
                throw ShopError.soldOut(sku: "failing")
            }
        }
        try await waitUntil("the failing closure is queued") { storage.core.writer.queuedCount == 1 }
        let kept = Task {
            try await storage.core.writer.performOnce { context in
                context.onAbort { keptAborted.increment() }
                context.onCommit { keptCommitted.increment() }
            }
        }
        try await waitUntil("the kept closure is queued") { storage.core.writer.queuedCount == 2 }
        try await hold.release()
        await #expect(throws: (any Error).self) { try await failing.value }
        try await kept.value
        #expect(failingAborted.value == 1)
        #expect(failingCommitted.value == 0)
        #expect(keptAborted.value == 0)
        #expect(keptCommitted.value == 1)
    }
}
