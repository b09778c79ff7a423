import Foundation
import Testing

@testable import LocalStorageKit

/// Version 1 of the seed's profile, as an older app wrote it.
struct ProfileV1: LocalStorable {
    static var storageName: String { "UserProfile" }
    let id: String
    var firstName: String
    var lastName: String
    var email: String
}

/// The seed's profile at version 2, with the seed's JSONSerialization migration.
struct UserProfile: LocalStorageVersioned, LocalStorageIndexed {
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

    static var storageIndexes: [StorageIndex<UserProfile>] { [StorageIndex("fullName", \.fullName)] }
}

/// The seed's JSONDecoder-form migration between two payload structs.
struct LegacyPayload: Codable {
    let id: String
    let name: String
    let age: Int
}
struct ModernPayload: Codable {
    let id: String
    let displayName: String
    let birthYear: Int
    init(legacy: LegacyPayload) {
        id = legacy.id
        displayName = legacy.name.uppercased()
        birthYear = 2026 - legacy.age
    }
}

struct MemberV1: LocalStorable {
    static var storageName: String { "Member" }
    let id: String
    let name: String
    let age: Int
}

struct Member: LocalStorageVersioned {
    let id: String
    let displayName: String
    let birthYear: Int
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] {
        [
            StorageMigration(from: 1, to: 2) { data in
                let json = try JSONDecoder().decode(LegacyPayload.self, from: data)
                let upgraded = ModernPayload(legacy: json)
                return try JSONEncoder().encode(upgraded)
            }
        ]
    }
}

/// Three versions: 1 has `n`, 2 renames it to `count`, 3 adds `label`.
struct CounterV1: LocalStorable {
    static var storageName: String { "Counter" }
    let id: String
    var n: Int
}

struct Counter: LocalStorageVersioned, Equatable {
    let id: String
    var count: Int
    var label: String
    static var currentVersion: Int { 3 }
    static var migrations: [StorageMigration] {
        [
            StorageMigration(from: 2, to: 3) { data in
                guard var json = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw CocoaError(.coderReadCorrupt)
                }
                json["label"] = "c\(json["count"] as? Int ?? -1)"
                return try JSONSerialization.data(withJSONObject: json)
            },
            StorageMigration(from: 1, to: 2) { data in
                guard var json = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw CocoaError(.coderReadCorrupt)
                }
                json["count"] = json.removeValue(forKey: "n")
                return try JSONSerialization.data(withJSONObject: json)
            },
        ]
    }
}

struct Refusal: Error, CustomStringConvertible { var description: String { "refused" } }

struct BrokenCounter: LocalStorageVersioned {
    static var storageName: String { "Counter" }
    let id: String
    var count: Int
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] { [StorageMigration(from: 1, to: 2) { _ in throw Refusal() }] }
}

struct GappedCounter: LocalStorageVersioned {
    static var storageName: String { "Counter" }
    let id: String
    var count: Int
    static var currentVersion: Int { 3 }
    static var migrations: [StorageMigration] {
        [StorageMigration(from: 1, to: 2) { $0 }]
    }
}

/// A step from version 1 to 2 of a `CounterV1` payload: `n` renamed `count`, then `edit`.
func counterStep(
    to version: Int = 2, _ edit: @escaping @Sendable (inout [String: Any]) -> Void = { _ in }
) -> StorageMigration {
    StorageMigration(from: 1, to: version) { data in
        guard var json = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw CocoaError(.coderReadCorrupt)
        }
        json["count"] = json.removeValue(forKey: "n")
        edit(&json)
        return try JSONSerialization.data(withJSONObject: json)
    }
}

/// A migration that changes the id, which no step may do.
struct RenamingCounter: LocalStorageVersioned {
    static var storageName: String { "Counter" }
    let id: String
    var count: Int
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] {
        [counterStep { $0["id"] = "changed-\($0["id"] as? String ?? "")" }]
    }
}

/// A migration that decomposes the id's "é": canonically equal text, other bytes, so another record key.
struct DecomposingCounter: LocalStorageVersioned {
    static var storageName: String { "Counter" }
    let id: String
    var count: Int
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] {
        [counterStep { $0["id"] = ($0["id"] as? String ?? "").decomposedStringWithCanonicalMapping }]
    }
}

/// Two steps from version 1: one to the current version 2, one past it (for a later app's chain).
struct ForkedCounter: LocalStorageVersioned {
    static var storageName: String { "Counter" }
    let id: String
    var count: Int
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] {
        [StorageMigration(from: 1, to: 3) { _ in throw Refusal() }, counterStep()]
    }
}

/// Only a step past the current version starts at version 1.
struct OvershootingCounter: LocalStorageVersioned {
    static var storageName: String { "Counter" }
    let id: String
    var count: Int
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] { [StorageMigration(from: 1, to: 3) { $0 }] }
}

/// An indexed type whose only step throws: its indexed reads re-index the old records, which fails.
struct BrokenIndexedCounter: LocalStorageVersioned, LocalStorageIndexed {
    static var storageName: String { "Counter" }
    let id: String
    var count: Int
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] { [StorageMigration(from: 1, to: 2) { _ in throw Refusal() }] }
    static var storageIndexes: [StorageIndex<Self>] { [.number("count") { $0.count }] }
}

@Suite struct MigrationTests {
    /// Writes v1 records with an old app, then returns a store reopened on the same directory.
    func storeWithOldRecords<Old: LocalStorable>(
        _ records: [Old], codec: StorageCodec = .json
    ) async throws
        -> LocalStorage
    {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.codec = codec
        do {
            let old = try LocalStorage(configuration: configuration)
            try await old.save(contentsOf: records)
        }
        return try LocalStorage(configuration: configuration)
    }

    @Test(arguments: [StorageCodec.json, .binary])
    func seedJSONSerializationMigrationUpgradesOnRead(codec: StorageCodec) async throws {
        let storage = try await storeWithOldRecords(
            [ProfileV1(id: "usr_1", firstName: "Ada", lastName: "Lovelace", email: "ada@example.com")], codec: codec)
        #expect(try await storage.metadata(UserProfile.self, id: "usr_1")?.version == 1)
        let profile = try #require(try await storage.fetch(UserProfile.self, id: "usr_1"))
        #expect(profile.fullName == "Ada Lovelace")
        #expect(profile.email == "ada@example.com")
        // Written back once, at the current version, in the store's codec.
        #expect(try await storage.metadata(UserProfile.self, id: "usr_1")?.version == 2)
        #expect(try await storage.fetch(UserProfile.self, id: "usr_1")?.fullName == "Ada Lovelace")
    }

    @Test func seedJSONDecoderMigrationUpgradesOnRead() async throws {
        let storage = try await storeWithOldRecords([MemberV1(id: "m1", name: "grace", age: 40)])
        let member = try #require(try await storage.fetch(Member.self, id: "m1"))
        #expect(member.displayName == "GRACE")
        #expect(member.birthYear == 1986)
    }

    @Test func threeStepChainRunsInOrder() async throws {
        let storage = try await storeWithOldRecords([CounterV1(id: "c", n: 7)])
        #expect(try await storage.fetch(Counter.self, id: "c") == Counter(id: "c", count: 7, label: "c7"))
        #expect(try await storage.metadata(Counter.self, id: "c")?.version == 3)
    }

    @Test func throwingStepLeavesTheRecordUntouched() async throws {
        let storage = try await storeWithOldRecords([CounterV1(id: "c", n: 7)])
        let before = try #require(try await storage.metadata(BrokenCounter.self, id: "c"))
        await #expect {
            try await storage.fetch(BrokenCounter.self, id: "c")
        } throws: { error in
            guard case LocalStorageError.migrationFailed(let from, let to, let underlying) = error else { return false }
            return from == 1 && to == 2 && underlying is Refusal
        }
        #expect(try await storage.metadata(BrokenCounter.self, id: "c") == before)
        #expect(try await storage.fetch(CounterV1.self, id: "c")?.n == 7)
    }

    @Test func missingStepFailsWithMigrationFailed() async throws {
        let storage = try await storeWithOldRecords([CounterV1(id: "c", n: 7)])
        await #expect {
            try await storage.fetch(GappedCounter.self, id: "c")
        } throws: { error in
            guard case LocalStorageError.migrationFailed(let from, let to, _) = error else { return false }
            return from == 2 && to == 3
        }
        #expect(try await storage.metadata(GappedCounter.self, id: "c")?.version == 1)
        #expect(MigrationValidator.problems(steps: GappedCounter.migrations, current: 3) == ["no step from version 2"])
        #expect(MigrationValidator.problems(steps: Counter.migrations, current: 3).isEmpty)
    }

    /// A record is kept under its id: a migration that changes the id fails, and the record is left as it was
    /// (it was written back under its old key with the new id in its payload, which an export could not restore).
    @Test func aMigrationThatChangesTheIdFails() async throws {
        let storage = try await storeWithOldRecords([CounterV1(id: "c", n: 7)])
        await #expect {
            try await storage.fetch(RenamingCounter.self, id: "c")
        } throws: { error in
            guard case LocalStorageError.migrationFailed(1, 2, let underlying) = error,
                case MigrationChainError.changedID(stored: "c", migrated: "changed-c") = underlying
            else { return false }
            return true
        }
        #expect(try await storage.metadata(RenamingCounter.self, id: "c")?.version == 1)
        #expect(try await storage.fetch(CounterV1.self, id: "c")?.n == 7)
        // Compared by bytes: a decomposed "é" is another key, though `==` takes it for the same text.
        try await storage.save(CounterV1(id: "caf\u{E9}", n: 8))
        await #expect {
            try await storage.fetch(DecomposingCounter.self, id: "caf\u{E9}")
        } throws: { error in
            guard case LocalStorageError.migrationFailed(1, 2, let underlying) = error,
                case MigrationChainError.changedID = underlying
            else { return false }
            return true
        }
    }

    /// A step that goes past the current version is not taken (it belongs to a later app's chain): the one that
    /// fits is; with none that fits, the error says where the step goes.
    @Test func aStepPastTheCurrentVersionIsNotTaken() async throws {
        let storage = try await storeWithOldRecords([CounterV1(id: "c", n: 7), CounterV1(id: "d", n: 8)])
        #expect(try await storage.fetch(ForkedCounter.self, id: "c")?.count == 7)
        await #expect {
            try await storage.fetch(OvershootingCounter.self, id: "d")
        } throws: { error in
            guard case LocalStorageError.migrationFailed(1, 2, let underlying) = error,
                case MigrationChainError.stepPastCurrent(from: 1, past: 3, to: 2) = underlying
            else { return false }
            return "\(underlying)".contains("goes to 3, past the current version 2")
        }
    }

    @Test func migrateAllUpgradesEveryRecordInBatches() async throws {
        let storage = try await storeWithOldRecords((0..<10_000).map { CounterV1(id: "c\($0)", n: $0) })
        let reports = ProgressLog()
        let migrated = try await storage.migrateAll(Counter.self) { reports.append($0) }
        #expect(migrated == 10_000)
        let last = try #require(reports.last)
        #expect(last.processed == 10_000 && last.total == 10_000 && last.migrated == 10_000)
        #expect(reports.count > 10)
        #expect(try await storage.migrateAll(Counter.self) == 0)
        #expect(try await storage.metadata(Counter.self, id: "c9999")?.version == 3)
        #expect(try await storage.fetch(Counter.self, id: "c4242") == Counter(id: "c4242", count: 4242, label: "c4242"))
    }

    @Test func indexedQueriesSeeMigratedValues() async throws {
        let storage = try await storeWithOldRecords([
            ProfileV1(id: "u1", firstName: "Ada", lastName: "Lovelace", email: "a@x"),
            ProfileV1(id: "u2", firstName: "Alan", lastName: "Turing", email: "t@x"),
        ])
        let hits = try await storage.fetch(UserProfile.self, matching: [.hasPrefix("fullName", "Alan")])
        #expect(hits.map(\.id) == ["u2"])
        #expect(try await storage.count(UserProfile.self, matching: [.equals("fullName", "Ada Lovelace")]) == 1)
    }

    /// An indexed read that must re-index a record whose migration throws fails with that `migrationFailed`, as
    /// a fetch of the record does (it was a `decodingFailed` wrapping it, which a `catch …migrationFailed` missed).
    @Test func anIndexedReadOverAFailingMigrationThrowsMigrationFailed() async throws {
        let storage = try await storeWithOldRecords([CounterV1(id: "c", n: 7)])
        let isTheStepsFailure: @Sendable (any Error) -> Bool = { error in
            guard case LocalStorageError.migrationFailed(1, 2, let underlying) = error else { return false }
            return underlying is Refusal
        }
        await #expect(
            performing: { try await storage.count(BrokenIndexedCounter.self, matching: [.atLeast("count", 0)]) },
            throws: isTheStepsFailure)
        await #expect(
            performing: { try await storage.fetch(BrokenIndexedCounter.self, matching: [.atLeast("count", 0)]) },
            throws: isTheStepsFailure)
        await #expect(
            performing: {
                try await storage.page(
                    BrokenIndexedCounter.self, matching: [], orderedBy: .ascending("count"), page: 1, pageSize: 5)
            }, throws: isTheStepsFailure)
        await #expect(
            performing: {
                try await storage.write { tx in
                    try tx.count(BrokenIndexedCounter.self, matching: [.atLeast("count", 0)])
                }
            }, throws: isTheStepsFailure)
        #expect(try await storage.fetch(CounterV1.self, id: "c")?.n == 7)
    }
}

/// Collects progress reports from the writer thread.
final class ProgressLog: @unchecked Sendable {
    // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var reports: [MigrationProgress] = []
    func append(_ report: MigrationProgress) { lock.withLock { reports.append(report) } }
    var last: MigrationProgress? { lock.withLock { reports.last } }
    var count: Int { lock.withLock { reports.count } }
}
