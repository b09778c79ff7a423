import Foundation
import Testing

@testable import LocalStorageKit

/// Ids of every supported kind key their records, and every call that takes an id takes the model's own.
@Suite struct IdentifierTests {
    struct Session: LocalStorable, Equatable {
        let id: UUID
        var user: String
    }

    struct Reading: LocalStorable, Equatable {
        let id: UInt64
        var value: Double
    }

    /// An id type that is neither a UUID nor LosslessStringConvertible.
    struct Coordinate: Hashable, Codable, Sendable {
        let x: Int
        let y: Int
    }

    struct Tile: LocalStorable {
        let id: Coordinate
    }

    @Test func uuidIdsWorkEverywhereAnIdDoes() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let repository = storage.repository(Session.self)
        let id = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        let session = Session(id: id, user: "ada")
        try await storage.save(session)
        #expect(try await storage.fetch(Session.self, id: id) == session)
        #expect(try await repository.fetch(id: id) == session)
        #expect(try await storage.fetch(Session.self, id: id.uuidString) == session)  // keyed by uuidString
        #expect(try await storage.metadata(Session.self, id: id)?.expiresAt == nil)
        #expect(try await repository.metadata(id: id) != nil)

        let updated = try await storage.update(Session.self, id: id) { $0.user = "grace" }
        #expect(updated.user == "grace")
        #expect(try await repository.update(id: id) { $0.user = "lin" }.user == "lin")
        try await storage.setExpiration(Session.self, id: id, .hours(1))
        #expect(try await storage.metadata(Session.self, id: id)?.expiresAt != nil)
        try await repository.setExpiration(id: id, .never)
        #expect(try await storage.metadata(Session.self, id: id)?.expiresAt == nil)
        #expect(try await storage.fetch(Session.self)[0].user == "lin")

        try await storage.delete(Session.self, id: id)
        #expect(try await repository.fetch(id: id) == nil)
        try await repository.save(session)
        try await repository.delete(id: id)
        #expect(try await storage.count(Session.self) == 0)
        await #expect(throws: LocalStorageError.notFound(id: id.uuidString)) {
            try await storage.update(Session.self, id: id) { $0.user = "x" }
        }
    }

    @Test func integerIdsOfAnyWidthKeyByTheirDigits() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Reading(id: .max, value: 1.5))
        #expect(try await storage.fetch(Reading.self, id: UInt64.max)?.value == 1.5)
        #expect(try await storage.fetch(Reading.self, id: "18446744073709551615")?.value == 1.5)
        try await storage.save(Reading(id: 7, value: 2.5))
        let many = try await storage.fetch(Reading.self, ids: [7, .max, 8])
        #expect(many.mapValues(\.value) == [7: 2.5, .max: 1.5])
    }

    @Test func batchReadsTakeIdsOfEveryKind() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let sessions = (0..<3).map { Session(id: UUID(), user: "u\($0)") }
        try await storage.save(contentsOf: sessions)
        let found = try await storage.fetch(Session.self, ids: sessions.map(\.id) + [UUID()])
        #expect(found == Dictionary(uniqueKeysWithValues: sessions.map { ($0.id, $0) }))
        await #expect(throws: LocalStorageError.self) {
            _ = try await storage.fetch(Tile.self, ids: [Coordinate(x: 1, y: 2)])
        }
    }

    @Test func anUnsupportedIdTypeIsAnInvalidIdNotAGuessedKey() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        await #expect {
            try await storage.save(Tile(id: Coordinate(x: 1, y: 2)))
        } throws: { error in
            guard case LocalStorageError.invalidId(let reason) = error else { return false }
            return reason.contains("Coordinate")
        }
    }
}
