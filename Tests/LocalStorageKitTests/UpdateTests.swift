import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

@Suite struct UpdateTests {
    struct Refusal: Error, Equatable { let reason: String }

    /// A cancelled caller still gets the operation's own error: only a wait its cancellation cut short becomes
    /// `CancellationError` (/work/review-78.md #2: every error of a cancelled task did).
    @Test func anUpdateOfAMissingIdInACancelledTaskThrowsNotFound() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await storage.update(Product.self, id: "missing") { $0.price += 1 }
        }
        switch await task.result {
        case .failure(LocalStorageError.notFound(let id)): #expect(id == "missing")
        case let other: Issue.record("expected notFound, got \(other)")
        }
    }

    @Test func mutateErrorComesOutUnchangedAndWritesNothing() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Note(id: "n", text: "before"))
        await #expect(throws: Refusal(reason: "no")) {
            try await storage.update(Note.self, id: "n") { note in
                note.text = "after"
                throw Refusal(reason: "no")
            }
        }
        await #expect(throws: Refusal(reason: "repo")) {
            try await storage.repository(Note.self).update(id: "n") { _ in throw Refusal(reason: "repo") }
        }
        #expect(try await storage.fetch(Note.self, id: "n")?.text == "before")
        // The store's own errors are still LocalStorageError.
        await #expect(throws: LocalStorageError.notFound(id: "missing")) {
            try await storage.update(Note.self, id: "missing") { $0.text = "x" }
        }
    }

    @Test func mutateRunsOnceWhenAPeerOfItsBatchFailsInTheWriter() async throws {
        var configuration = diskConfiguration()
        configuration.mapSize = 1 << 20
        configuration.maxMapSize = 1 << 20
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "n", text: "a"))
        let calls = CallCounter()
        let hold = try await WriterHold(storage)
        let update = Task {
            try await storage.update(Note.self, id: "n") { note in
                calls.increment()
                note.text = "b"
            }
        }
        try await waitUntil("the update is queued") { storage.core.writer.queuedCount == 1 }
        // Queued right behind the update: a save that cannot fit in the map.
        let tooBig = Task { try await storage.save(Note(id: "big", text: String(repeating: "x", count: 2 << 20))) }
        try await waitUntil("the save is queued") { storage.core.writer.queuedCount == 2 }
        try await hold.release()
        await #expect(throws: LocalStorageError.storageFull) { try await tooBig.value }
        #expect(try await update.value.text == "b")
        #expect(calls.value == 1)
        #expect(try await storage.fetch(Note.self, id: "n")?.text == "b")
    }

    @Test func mutateRunsOnceWhenAnotherUpdateOfItsBatchThrows() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: [Note(id: "a", text: "a"), Note(id: "b", text: "b")])
        let calls = CallCounter()
        let hold = try await WriterHold(storage)
        let first = Task {
            try await storage.update(Note.self, id: "a") { note in
                calls.increment()
                note.text = "a2"
            }
        }
        try await waitUntil("the first update is queued") { storage.core.writer.queuedCount == 1 }
        let second = Task {
            try await storage.update(Note.self, id: "a") { note in
                calls.increment()
                note.text += "+"  // sees the first update's value: they share the batch
            }
        }
        try await waitUntil("the second update is queued") { storage.core.writer.queuedCount == 2 }
        let failing = Task { try await storage.update(Note.self, id: "b") { _ in throw Refusal(reason: "peer") } }
        try await waitUntil("the failing update is queued") { storage.core.writer.queuedCount == 3 }
        try await hold.release()
        await #expect(throws: Refusal(reason: "peer")) { try await failing.value }
        #expect(try await first.value.text == "a2")
        #expect(try await second.value.text == "a2+")
        #expect(calls.value == 2)
        #expect(try await storage.fetch(Note.self, id: "a")?.text == "a2+")
        #expect(try await storage.fetch(Note.self, id: "b")?.text == "b")
    }

    @Test func concurrentUpdatesAndSavesStillCommitInGroups() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: (0..<50).map { Note(id: "n\($0)", text: "") })
        let hold = try await WriterHold(storage)
        let before = storage.commitCount
        let requests = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask { try await storage.update(Note.self, id: "n\(index)") { $0.text = "u" } }
                    group.addTask { try await storage.save(Note(id: "s\(index)", text: "s")) }
                }
                try await group.waitForAll()
            }
        }
        try await waitUntil("every request is queued") { storage.core.writer.queuedCount == 100 }
        try await hold.release()
        try await requests.value
        // One transaction for the saves, one for the updates (the hold's job is not counted).
        #expect(storage.commitCount - before == 2)
        #expect(try await storage.fetch(Note.self, options: FetchOptions(limit: 50)).allSatisfy { $0.text == "u" })
    }

    @Test func mutateRunsOnceWhenItsOwnWriteMakesTheMapGrow() async throws {
        var configuration = diskConfiguration()
        configuration.mapSize = 256 << 10
        configuration.maxMapSize = 64 << 20
        configuration.growsMapFromMapSize = true
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "n", text: "small"))
        let calls = CallCounter()
        let big = String(repeating: "y", count: 1 << 20)
        let updated = try await storage.update(Note.self, id: "n") { note in
            calls.increment()
            note.text = big
        }
        #expect(updated.text == big)
        #expect(calls.value == 1)
        #expect(try await storage.fetch(Note.self, id: "n")?.text == big)
    }
}
