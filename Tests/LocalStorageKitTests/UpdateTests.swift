import Foundation
import Testing
@testable import LocalStorageKit

@Suite struct UpdateTests {
    struct Refusal: Error, Equatable { let reason: String }

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

    @Test func mutateRunsOnceWhenItsOwnWriteMakesTheMapGrow() async throws {
        var configuration = diskConfiguration()
        configuration.mapSize = 256 << 10
        configuration.maxMapSize = 64 << 20
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
