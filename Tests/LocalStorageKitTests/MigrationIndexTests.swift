import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

/// A task as version 1 of an app wrote it: `status` indexed, "open" for a task not started.
struct TaskV1: LocalStorageIndexed {
    static var storageName: String { "Task" }
    let id: String
    var status: String
    static var storageIndexes: [StorageIndex<TaskV1>] { [StorageIndex("status", \.status)] }
}

/// Version 2: the same index declaration, and "open" is called "active". The step throws for a record whose
/// status is "broken" unless `tolerant` (an app whose fixed step kept the version).
struct TaskV2: LocalStorageVersioned, LocalStorageIndexed {
    static var storageName: String { "Task" }
    let id: String
    var status: String
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] { TaskSteps.steps(tolerant: false) }
    static var storageIndexes: [StorageIndex<TaskV2>] { [StorageIndex("status", \.status)] }
}

/// Version 2 again, with the step fixed.
struct TaskV2Fixed: LocalStorageVersioned, LocalStorageIndexed {
    static var storageName: String { "Task" }
    let id: String
    var status: String
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] { TaskSteps.steps(tolerant: true) }
    static var storageIndexes: [StorageIndex<TaskV2Fixed>] { [StorageIndex("status", \.status)] }
}

enum TaskSteps {
    struct Broken: Error {}

    static func steps(tolerant: Bool) -> [StorageMigration] {
        [
            StorageMigration(from: 1, to: 2) { data in
                guard var json = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw CocoaError(.coderReadCorrupt)
                }
                switch json["status"] as? String {
                case "open": json["status"] = "active"
                case "broken" where !tolerant: throw Broken()
                case "broken": json["status"] = "active"
                default: break
                }
                return try JSONSerialization.data(withJSONObject: json)
            }
        ]
    }
}

/// Indexed queries after a version moved with the index declaration unchanged: only the migration pass
/// brings the old records' index entries up to date (no re-index finds them).
@Suite struct MigrationIndexTests {
    static func store(_ records: [TaskV1]) async throws -> LocalStorageConfiguration {
        var configuration = diskConfiguration(temporaryDirectory())
        configuration.codec = .json
        let old = try LocalStorage(configuration: configuration)
        try await old.save(contentsOf: records)
        return configuration
    }

    @Test func theStoresIndexedQueriesSeeMigratedValues() async throws {
        let configuration = try await Self.store([TaskV1(id: "t1", status: "open"), TaskV1(id: "t2", status: "done")])
        let storage = try LocalStorage(configuration: configuration)
        #expect(try await storage.count(TaskV2.self, matching: [.equals("status", "active")]) == 1)
        #expect(try await storage.fetch(TaskV2.self, matching: [.equals("status", "open")]).isEmpty)
        #expect(try await storage.metadata(TaskV2.self, id: "t1")?.version == 2)
    }

    @Test func aWriteTransactionsIndexedReadsSeeMigratedValues() async throws {
        let configuration = try await Self.store([
            TaskV1(id: "t1", status: "open"), TaskV1(id: "t2", status: "done"), TaskV1(id: "t3", status: "open"),
        ])
        let storage = try LocalStorage(configuration: configuration)
        let (active, deleted) = try await storage.write { tx in
            (
                try tx.count(TaskV2.self, matching: [.equals("status", "active")]),
                try tx.delete(TaskV2.self, matching: [.equals("status", "open")])
            )
        }
        #expect(active == 2)
        #expect(deleted == 0)
        #expect(try await storage.count(TaskV2.self) == 3)
        #expect(try await storage.metadata(TaskV2.self, id: "t3")?.version == 2)
        // The pass ran in the transaction and marked the type: the store's version of it moved.
        let versions = try storage.core.storedTypeInfos().filter { $0.name == "Task" }.map(\.version)
        #expect(versions == [2])
    }

    /// A record whose step throws is left behind: the type's stored version stays where it was, so that an app
    /// whose fixed step keeps the version upgrades it (and its index entries) at its first indexed query.
    @Test func aPassThatLeftARecordBehindRunsAgainAtTheNextLaunch() async throws {
        let configuration = try await Self.store([
            TaskV1(id: "t1", status: "open"), TaskV1(id: "t2", status: "broken"),
        ])
        do {
            let logger = MetadataLogger()
            let storage = try LocalStorage(configuration: configuration, logger: logger)
            await #expect(throws: LocalStorageError.self) {
                try await storage.fetch(TaskV2.self, matching: [.equals("status", "broken")])
            }
            // `migrationFailed` names versions only: the log names the record that failed.
            #expect(
                logger.entries.contains { $0.message == "A record could not be migrated" && $0.metadata["id"] == "t2" })
            #expect(try await storage.count(TaskV2.self, matching: [.equals("status", "active")]) == 1)
        }
        let storage = try LocalStorage(configuration: configuration)
        #expect(try await storage.count(TaskV2Fixed.self, matching: [.equals("status", "active")]) == 2)
        #expect(try await storage.fetch(TaskV2Fixed.self, matching: [.equals("status", "broken")]).isEmpty)
        #expect(try await storage.metadata(TaskV2Fixed.self, id: "t2")?.version == 2)
    }
}

/// A record holding NaN and ±Infinity, as the binary codec stores them, at version 1.
struct ReadingV1: LocalStorable {
    static var storageName: String { "Reading" }
    let id: String
    var value: Double
    var low: Float
    var samples: [Double]
}

/// Version 2 adds a unit; the step passes the numbers through as it got them.
struct ReadingV2: LocalStorageVersioned, Equatable {
    static var storageName: String { "Reading" }
    let id: String
    var value: Double
    var low: Float
    var samples: [Double]
    var unit: String
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] {
        [
            StorageMigration(from: 1, to: 2) { data in
                guard var json = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw CocoaError(.coderReadCorrupt)
                }
                json["unit"] = "kPa"
                return try JSONSerialization.data(withJSONObject: json)
            }
        ]
    }
}

@Suite struct NonFiniteMigrationTests {
    /// JSON numbers cannot hold NaN or ±Infinity: the step gets them as the strings the CLI shows, and they
    /// decode back into the same numbers (the record could not be migrated at all before).
    @Test func recordsHoldingNonFiniteNumbersMigrate() async throws {
        let directory = temporaryDirectory()
        let configuration = diskConfiguration(directory)
        do {
            let old = try LocalStorage(configuration: configuration)
            try await old.save(ReadingV1(id: "r", value: .nan, low: -.infinity, samples: [1.5, .infinity, -0.0]))
            try await old.save(ReadingV1(id: "f", value: 2, low: 1, samples: []))
        }
        let storage = try LocalStorage(configuration: configuration)
        let reading = try #require(try await storage.fetch(ReadingV2.self, id: "r"))
        #expect(reading.value.isNaN)
        #expect(reading.low == -.infinity)
        #expect(reading.samples.count == 3 && reading.samples[1] == .infinity && reading.samples[2] == 0)
        #expect(reading.unit == "kPa")
        #expect(
            try await storage.fetch(ReadingV2.self, id: "f")
                == ReadingV2(id: "f", value: 2, low: 1, samples: [], unit: "kPa"))
        #expect(try await storage.migrateAll(ReadingV2.self) >= 0)
        #expect(try await storage.metadata(ReadingV2.self, id: "r")?.version == 2)
        #expect(try await storage.fetch(ReadingV2.self, id: "r")?.low == -.infinity)
    }
}

/// A logger that keeps every message with its metadata.
final class MetadataLogger: StorageLogger {
    private let recorded = Mutex<[(message: String, metadata: [String: String])]>([])

    var entries: [(message: String, metadata: [String: String])] { recorded.withLock { $0 } }

    func log(level: StorageLogLevel, message: String, metadata: [String: String]?) {
        recorded.withLock { $0.append((message, metadata ?? [:])) }
    }

    func record(duration: TimeInterval, operation: String) {}
}

/// A value that is a number when it reads as one, else text (as "any JSON value" types decode).
enum Scalar: Codable, Equatable {
    case number(Double)
    case text(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else {
            self = .text(try container.decode(String.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let number): try container.encode(number)
        case .text(let text): try container.encode(text)
        }
    }
}

struct LabelV1: LocalStorable {
    static var storageName: String { "Label" }
    let id: String
    var label: String
}

struct LabelV2: LocalStorageVersioned, Equatable {
    static var storageName: String { "Label" }
    let id: String
    var label: Scalar
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] { [StorageMigration(from: 1, to: 2) { $0 }] }
}

@Suite struct NonFiniteStringsTests {
    /// The strings that stand for non-finite numbers are read as numbers only in a record whose numbers became
    /// them: a text "NaN" stays text.
    @Test(arguments: [StorageCodec.binary, .json])
    func aTextThatSpellsNaNStaysText(codec: StorageCodec) async throws {
        var configuration = diskConfiguration(temporaryDirectory())
        configuration.codec = codec
        do {
            let old = try LocalStorage(configuration: configuration)
            try await old.save(LabelV1(id: "l", label: "NaN"))
            try await old.save(LabelV1(id: "i", label: "Infinity"))
        }
        let storage = try LocalStorage(configuration: configuration)
        #expect(try await storage.fetch(LabelV2.self, id: "l") == LabelV2(id: "l", label: .text("NaN")))
        #expect(try await storage.fetch(LabelV2.self, id: "i") == LabelV2(id: "i", label: .text("Infinity")))
    }
}
