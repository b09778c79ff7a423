// The code listings of the DocC article "Migrations", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum MigrationSnippets {
    // snippet: migrations-user-profile
    struct UserProfile: LocalStorageVersioned {
        let id: String
        var fullName: String
        var email: String

        static var currentVersion: Int { 2 }

        static var migrations: [StorageMigration] {
            [
                StorageMigration(from: 1, to: 2) { oldData in
                    guard var json = try JSONSerialization.jsonObject(with: oldData) as? [String: Any] else {
                        throw CocoaError(.coderReadCorrupt)
                    }
                    let first = json.removeValue(forKey: "firstName") as? String ?? ""
                    let last = json.removeValue(forKey: "lastName") as? String ?? ""
                    json["fullName"] = "\(first) \(last)".trimmingCharacters(in: .whitespaces)
                    return try JSONSerialization.data(withJSONObject: json)
                }
            ]
        }
    }
    // snippet-end

    /// Version 1 of the same stored type, as an older app wrote it.
    struct UserProfileV1: LocalStorable {
        static var storageName: String { "UserProfile" }
        let id: String
        var firstName: String
        var lastName: String
        var email: String
    }

    struct LegacyPayload: Codable {
        var id: String
        var firstName: String
        var lastName: String
        var email: String
    }

    struct ModernPayload: Codable {
        var id: String
        var fullName: String
        var email: String

        init(legacy: LegacyPayload) {
            id = legacy.id
            fullName = "\(legacy.firstName) \(legacy.lastName)"
            email = legacy.email
        }
    }

    @Suite struct Tests {
        @Test func migrateAll() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            try await storage.save(
                UserProfileV1(
                    id: "p1", firstName: "Ada", lastName: "Lovelace",
                    email: "ada@example.com"))
            // snippet: migrations-migrate-all
            let migrated = try await storage.migrateAll(UserProfile.self) { progress in
                print("\(progress.processed) of \(progress.total)")
            }
            // snippet-end
            #expect(migrated == 1)
            #expect(try await storage.fetch(UserProfile.self, id: "p1")?.fullName == "Ada Lovelace")
            #expect(try await storage.metadata(UserProfile.self, id: "p1")?.version == 2)
        }

        @Test func codableStep() throws {
            // snippet: migrations-codable-step
            let v1ToV2 = StorageMigration(from: 1, to: 2) { data in
                let legacy = try JSONDecoder().decode(LegacyPayload.self, from: data)
                let upgraded = ModernPayload(legacy: legacy)
                return try JSONEncoder().encode(upgraded)
            }
            // snippet-end
            #expect(v1ToV2.from == 1 && v1ToV2.to == 2)
        }
    }
}
