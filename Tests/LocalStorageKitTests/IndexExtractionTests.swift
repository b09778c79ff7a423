import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@testable import LocalStorageKit

/// A key path index reads a property stored inline at its offset instead of projecting the key path; whatever
/// the property (nested, optional, in a class, computed), the value is the key path's.
@Suite struct IndexExtractionTests {
    struct Inner: Sendable {
        var label: String
        var weight: Double?
    }

    struct Shape: Sendable {
        var flag: Bool
        var name: String
        var nickname: String?
        var inner: Inner
        var count: Int8
        var big: UInt64
        var score: Float?
        var computed: String { name + "!" }
    }

    final class Box: Sendable {
        let name: String
        let size: Int?
        init(name: String, size: Int?) {
            self.name = name
            self.size = size
        }
    }

    static func random(_ random: inout SplitMix64) -> Shape {
        func text() -> String {
            String((0..<Int(random.next() % 40)).map { _ in Character(UnicodeScalar(UInt8(32 + random.next() % 90))) })
        }
        return Shape(
            flag: random.next() % 2 == 0, name: text(), nickname: random.next() % 3 == 0 ? nil : text(),
            inner: Inner(label: text(), weight: random.next() % 4 == 0 ? nil : Double(random.next() % 1000) / 7),
            count: Int8(truncatingIfNeeded: random.next()), big: random.next(),
            score: random.next() % 2 == 0 ? nil : Float(random.next() % 100) / 3)
    }

    @Test func keyPathIndexesReadWhatTheKeyPathProjects() {
        let indexes: [StorageIndex<Shape>] = [
            StorageIndex("flag", \.flag), StorageIndex("name", \.name), StorageIndex("nickname", \.nickname),
            StorageIndex("label", \.inner.label), StorageIndex("weight", \.inner.weight),
            StorageIndex("count", \.count), StorageIndex("big", \.big), StorageIndex("score", \.score),
            StorageIndex("computed", \.computed),
        ]
        let projected: [(Shape) -> IndexValue?] = [
            { .number($0.flag.storageNumber.value) }, { .string($0.name) }, { $0.nickname.map(IndexValue.string) },
            { .string($0.inner.label) }, { $0.inner.weight.map { .number($0.storageNumber.value) } },
            { .number($0.count.storageNumber.value) }, { .number($0.big.storageNumber.value) },
            { $0.score.map { .number($0.storageNumber.value) } }, { .string($0.computed) },
        ]
        // Every stored property of the struct is read at its offset; the computed one and the class's project.
        #expect(indexes.map { $0.propertyOffset != nil } == [true, true, true, true, true, true, true, true, false])
        var random = SplitMix64(seed: 91)
        for _ in 0..<500 {
            let shape = Self.random(&random)
            for (index, expected) in zip(indexes, projected) {
                #expect(index.extract(shape)?.storedBytes == expected(shape)?.storedBytes, "\(index.name)")
            }
        }
        let boxed: [StorageIndex<Box>] = [StorageIndex("name", \.name), StorageIndex("size", \.size)]
        #expect(boxed.allSatisfy { $0.propertyOffset == nil })
        let box = Box(name: "boxed", size: 7)
        #expect(boxed[0].extract(box)?.storedBytes == IndexValue.string("boxed").storedBytes)
        #expect(boxed[1].extract(box)?.storedBytes == IndexValue.number(7.storageNumber.value).storedBytes)
        #expect(boxed[1].extract(Box(name: "", size: nil)) == nil)
    }
}

/// Whether ``FlaggedIndexes`` declares its second index: an app reading a feature flag in `storageIndexes`.
let flaggedIndexesAreWide = Atomic<Bool>(false)

/// ``FlaggedRecordV2``'s flag, its own so that its test runs beside the other.
let flaggedRecordIsWide = Atomic<Bool>(false)

struct FlaggedRecordV1: LocalStorable {
    static var storageName: String { "FlaggedRecord" }
    let id: String
    var a: Int
    var b: String
}

/// Version 2 of ``FlaggedRecordV1`` (the same payload), whose declaration reads a flag.
struct FlaggedRecordV2: LocalStorageVersioned, LocalStorageIndexed {
    static var storageName: String { "FlaggedRecord" }
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] { [StorageMigration(from: 1, to: 2) { $0 }] }
    let id: String
    var a: Int
    var b: String
    static var storageIndexes: [StorageIndex<FlaggedRecordV2>] {
        flaggedRecordIsWide.load(ordering: .relaxed)
            ? [StorageIndex("a", \.a), StorageIndex("b", \.b)] : [StorageIndex("a", \.a)]
    }
}

struct FlaggedIndexes: LocalStorageIndexed, Equatable {
    let id: String
    var a: Int
    var b: String
    static var storageIndexes: [StorageIndex<FlaggedIndexes>] {
        flaggedIndexesAreWide.load(ordering: .relaxed)
            ? [StorageIndex("a", \.a), StorageIndex("b", \.b)] : [StorageIndex("a", \.a)]
    }
}

extension IndexExtractionTests {
    /// A single save computes index values with the declaration the store's schema was made from, read once per
    /// open store: kept for the whole process (review-73 #1), a declaration read differently at a later open left
    /// that open's saves without the new index's values while their headers named the new declaration.
    @Test func aDeclarationReadDifferentlyAtALaterOpenIndexesSingleSaves() async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(FlaggedIndexes(id: "x", a: 1, b: "one"))
        }
        flaggedIndexesAreWide.store(true, ordering: .relaxed)
        defer { flaggedIndexesAreWide.store(false, ordering: .relaxed) }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(FlaggedIndexes(id: "y", a: 2, b: "two"))
            #expect(try await storage.fetch(FlaggedIndexes.self, matching: [.equals("b", "two")]).map(\.id) == ["y"])
            #expect(try await storage.fetch(FlaggedIndexes.self, matching: [.equals("b", "one")]).map(\.id) == ["x"])
        }
        // The flag turns between the read that registers the type and the first saves of this open: a save, a
        // batch and a transaction's batch still index with the declaration the schema was registered with, whose
        // signature their records carry (review-74 #2: they were left out of "b" for the rest of the open).
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try await storage.fetch(FlaggedIndexes.self, id: "x")?.b == "one")
            flaggedIndexesAreWide.store(false, ordering: .relaxed)
            try await storage.save(FlaggedIndexes(id: "z", a: 3, b: "three"))
            try await storage.save(contentsOf: [FlaggedIndexes(id: "w", a: 4, b: "three")])
            try await storage.write { tx in try tx.save(contentsOf: [FlaggedIndexes(id: "v", a: 5, b: "three")]) }
            let found = try await storage.fetch(FlaggedIndexes.self, matching: [.equals("b", "three")])
            #expect(found.map(\.id).sorted() == ["v", "w", "z"])
        }
    }

    /// The migration pass (the first indexed query after a type's version grew) wrote its records back with the
    /// declaration as it read then, under the registered one's signature (review-75 #1).
    @Test func migratedRecordsAreIndexedWithTheRegisteredDeclaration() async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(contentsOf: (0..<20).map { FlaggedRecordV1(id: "r\($0)", a: $0, b: "b\($0 % 2)") })
        }
        flaggedRecordIsWide.store(true, ordering: .relaxed)
        defer { flaggedRecordIsWide.store(false, ordering: .relaxed) }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try await storage.fetch(FlaggedRecordV2.self, id: "none") == nil)  // registers [a, b]
            flaggedRecordIsWide.store(false, ordering: .relaxed)
            let found = try await storage.fetch(FlaggedRecordV2.self, matching: [.equals("b", "b1")])
            #expect(found.map(\.id).sorted() == (0..<20).filter { $0 % 2 == 1 }.map { "r\($0)" }.sorted())
            #expect(try await storage.metadata(FlaggedRecordV2.self, id: "r1")?.version == 2)
        }
    }
}

/// Two declarations whose names and kinds run together into the same bytes: a string index "a" and a number index
/// "b", against one number index named "a", 0, 1, "b" (API.md allows any character in an index name).
struct RunTogetherV1: LocalStorageIndexed {
    static var storageName: String { "RunTogether" }
    let id: String
    var a: String
    var b: Int
    static var storageIndexes: [StorageIndex<RunTogetherV1>] { [StorageIndex("a", \.a), StorageIndex("b", \.b)] }
}

struct RunTogetherV2: LocalStorageIndexed {
    static var storageName: String { "RunTogether" }
    let id: String
    var a: String
    var b: Int
    static var storageIndexes: [StorageIndex<RunTogetherV2>] { [StorageIndex("a\u{0}\u{1}b", \.b)] }
}

extension IndexExtractionTests {
    /// Declarations that differ have different signatures, even when one's index name holds a 0 followed by a
    /// kind's byte: the two above hashed the same bytes, so the second app took the first's records as indexed
    /// its way and its query found none of them (review-83 #6). Names without a 0 keep their signatures.
    @Test func declarationsWhoseNamesRunTogetherAreTold() async throws {
        #expect(RunTogetherV1.indexDeclaration.signature != RunTogetherV2.indexDeclaration.signature)
        let plain = IndexDeclaration(entries: [.init(name: "ab", kind: .string), .init(name: "c", kind: .number)])
        #expect(plain.signature == 0x8BED_F05C_ADD9_6234)
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(contentsOf: (0..<3).map { RunTogetherV1(id: "r\($0)", a: "x", b: $0) })
        }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try await storage.count(RunTogetherV2.self, matching: [.atLeast("a\u{0}\u{1}b", 0)]) == 3)
            let found = try await storage.fetch(RunTogetherV2.self, matching: [.equals("a\u{0}\u{1}b", 2)])
            #expect(found.map(\.id) == ["r2"])
        }
    }
}
