import Foundation
import Testing

@testable import LocalStorageKit

/// Version 1 of ``Unencodable``.
struct UnencodableV1: LocalStorable {
    static var storageName: String { "Unencodable" }
    let id: String
    var name: String
}

/// A versioned type whose values decode but never encode: its migrated records cannot be written back.
struct Unencodable: LocalStorageVersioned {
    struct Refused: Error {}
    let id: String
    var title: String
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] {
        [
            StorageMigration(from: 1, to: 2) { data in
                let old = try JSONDecoder().decode(UnencodableV1.self, from: data)
                return try JSONEncoder().encode(["id": old.id, "title": old.name])
            }
        ]
    }

    func encode(to encoder: any Encoder) throws { throw Refused() }
}

/// Work a read finds for the writer (a migrated record to store, an expired one to purge) never makes the
/// read wait for a commit.
@Suite struct ReadPathTests {
    /// Runs `read` while the writer is held up; true when it returned before the writer was let go.
    private func returnsWhileTheWriterIsHeld<R: Sendable>(
        _ storage: LocalStorage, _ read: @escaping @Sendable () async throws -> R
    ) async throws -> (returned: Bool, value: R) {
        let hold = try await WriterHold(storage)
        let done = CallCounter()
        let task = Task {
            let value = try await read()
            done.increment()
            return value
        }
        let returned: Bool
        do {
            try await waitUntil("the read returns", seconds: 60) { done.value > 0 }
            returned = true
        } catch is WaitTimedOut {
            returned = false
        }
        try await hold.release()
        return (returned, try await task.value)
    }

    @Test func aReadThatMeetsAnExpiredRecordDoesNotWaitForItsPurge() async throws {
        var configuration = diskConfiguration(durability: .full)
        configuration.autoPurgeExpiredOnRead = true
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "old", text: ""), expiration: .date(Date(timeIntervalSinceNow: -1)))
        try await storage.save(Note(id: "old2", text: ""), expiration: .date(Date(timeIntervalSinceNow: -1)))
        let byID = try await returnsWhileTheWriterIsHeld(storage) { try await storage.fetch(Note.self, id: "old") }
        #expect(byID.returned)
        #expect(byID.value == nil)
        let listing = try await returnsWhileTheWriterIsHeld(storage) { try await storage.fetch(Note.self) }
        #expect(listing.returned)
        #expect(listing.value.isEmpty)
        // The purges still happen, in the writer's order.
        try await storage.save(Note(id: "after", text: ""))
        #expect(try await storage.metadata(Note.self, id: "old") == nil)
        #expect(try await storage.metadata(Note.self, id: "old2") == nil)
    }

    @Test func aReadThatMigratesARecordDoesNotWaitForItsWriteBack() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration(durability: .full))
        try await storage.save(ProfileV1(id: "p", firstName: "Ada", lastName: "Lovelace", email: "a@x"))
        _ = try await storage.core.schema(for: UserProfile.self)  // registering a type is writer work too
        let read = try await returnsWhileTheWriterIsHeld(storage) {
            try await storage.fetch(UserProfile.self, id: "p")
        }
        #expect(read.returned)
        #expect(read.value?.fullName == "Ada Lovelace")
        try await storage.save(Note(id: "after", text: ""))
        #expect(try await storage.metadata(UserProfile.self, id: "p")?.version == 2)
    }

    @Test func aMigratedRecordThatCannotBeReencodedIsLogged() async throws {
        let logger = OperationLogger()
        let storage = try LocalStorage(configuration: diskConfiguration(), logger: logger)
        try await storage.save(UnencodableV1(id: "u", name: "kept"))
        let value = try await storage.fetch(Unencodable.self, id: "u")
        #expect(value?.title == "kept")
        let warnings = logger.entries(at: .warning).filter { $0.message.contains("Could not re-encode") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.metadata["id"] == "u")
        #expect(try await storage.metadata(Unencodable.self, id: "u")?.version == 1)
    }
}
