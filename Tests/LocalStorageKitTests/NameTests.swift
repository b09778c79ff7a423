import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

// MARK: - Many types from one generic: Deeper<Deeper<…<Level0>>> is a new type at every depth

protocol NamedLevel: Sendable { static var depth: Int { get } }
enum Level0: NamedLevel { static var depth: Int { 0 } }
enum Deeper<Inner: NamedLevel>: NamedLevel { static var depth: Int { Inner.depth + 1 } }

/// Names for the property test: the collisions the issue found first, then random ones made of dots,
/// slashes, NULs, spaces and emoji. Distinct by their bytes, and a pure function of the depth.
enum NameTable {
    static let fixed: [(type: String, indexes: [String])] = [
        ("Nul", ["v", "t"]), ("Nul\u{0}X", ["v", "t"]),  // a NUL used to cut the name
        ("A", ["b.c", "t"]), ("A.b", ["c", "t"]),  // a dot used to join type and index
        ("com.example.App.User", ["address.city", "t"]), ("com.example.App", ["User.address.city", "t"]),
        ("x/y", ["v", "t"]), ("x", ["y/v", "t"]), ("🦊", ["🦊", "t"]), ("🦊🦊", ["v", "🦊t"]),
    ]
    static let pieces = [".", "/", "\u{0}", " ", "🦊", "a", "b.c", "é", "e\u{301}", "i.1.2", "r.1", "\\"]

    static func names(_ depth: Int) -> (type: String, indexes: [String]) {
        if depth < fixed.count { return fixed[depth] }
        var random = SplitMix64(seed: UInt64(depth) &* 0x9E37)
        func name() -> String {
            (0..<Int.random(in: 1...4, using: &random)).map { _ in pieces.randomElement(using: &random) ?? "a" }
                .joined()
        }
        // The depth keeps type names apart; index names may repeat across types, and do.
        return (name() + "\u{0}\(depth)", [name(), name() + "#"])
    }
}

struct Named<Level: NamedLevel>: LocalStorageIndexed, Equatable {
    let id: String
    var value: Int
    var text: String
    static var storageName: String { NameTable.names(Level.depth).type }
    static var storageIndexes: [StorageIndex<Self>] {
        let names = NameTable.names(Level.depth).indexes
        return [.number(names[0]) { $0.value }, .string(names[1]) { $0.text }]
    }
}

/// A type of 16 number indexes per depth.
struct Sixteen<Level: NamedLevel>: LocalStorageIndexed {
    let id: String
    var value: Int
    static var storageName: String { "sixteen.\(Level.depth)" }
    static var storageIndexes: [StorageIndex<Self>] { (0..<16).map { n in .number("i\(n)") { $0.value + n } } }
}

/// Something done to each of a run of generic types.
protocol LevelVisitor {
    mutating func visit<Level: NamedLevel>(_ level: Level.Type) async throws
}

func visitLevels<Level: NamedLevel, Visitor: LevelVisitor>(
    from level: Level.Type, count: Int,
    _ visitor: inout Visitor
) async throws {
    guard count > 0 else { return }
    try await visitor.visit(Level.self)
    try await visitLevels(from: Deeper<Level>.self, count: count - 1, &visitor)
}

// MARK: - Declarations the store cannot hold

struct EmptyName: LocalStorable {
    let id: String
    static var storageName: String { "" }
}

struct EmptyIndexName: LocalStorageIndexed {
    let id: String
    static var storageIndexes: [StorageIndex<Self>] { [.string("") { $0.id }] }
}

struct TwoIndexesOneName: LocalStorageIndexed {
    let id: String
    var age: Int
    static var storageIndexes: [StorageIndex<Self>] { [.number("age") { $0.age }, .string("age") { $0.id }] }
}

struct TooManyIndexes: LocalStorageIndexed {
    let id: String
    static var storageIndexes: [StorageIndex<Self>] { (0..<65).map { n in .string("i\(n)") { $0.id } } }
}

struct LongName: LocalStorable {
    let id: String
    static var storageName: String { String(repeating: "n", count: 501) }
}

@Suite struct NameTests {
    struct Saver: LevelVisitor {
        let storage: LocalStorage
        var expected: [String: Int] = [:]

        mutating func visit<Level: NamedLevel>(_ level: Level.Type) async throws {
            let count = Level.depth % 4 + 1
            let records = (0..<count).map { Named<Level>(id: "id\($0)", value: $0, text: "t\(Level.depth)") }
            try await storage.save(contentsOf: records)
            expected[Named<Level>.storageName] = count
        }
    }

    struct Checker: LevelVisitor {
        let storage: LocalStorage
        let expected: [String: Int]
        var mismatches: [String] = []

        mutating func visit<Level: NamedLevel>(_ level: Level.Type) async throws {
            typealias Record = Named<Level>
            let names = NameTable.names(Level.depth).indexes
            let want = expected[Record.storageName] ?? -1
            let all = try await storage.fetch(Record.self)
            let counted = try await storage.count(Record.self, matching: [.atLeast(names[0], 0)])
            let texts = try await storage.fetch(
                Record.self, matching: [.equals(names[1], "t\(Level.depth)")],
                orderedBy: .descending(names[0]))
            if all.count != want || counted != want || texts.map(\.value) != Array((0..<max(0, want)).reversed())
                || all.contains(where: { $0.text != "t\(Level.depth)" })
            {
                mismatches.append(
                    "\(Level.depth) \(Record.storageName.debugDescription): \(all.count) \(counted) "
                        + "\(texts.count), want \(want)")
            }
        }
    }

    @Test func anyCharactersInNamesNeverCollide() async throws {
        let directory = temporaryDirectory()
        let levels = 60
        try await withStore(diskConfiguration(directory)) { storage async throws in
            var saver = Saver(storage: storage)
            try await visitLevels(from: Level0.self, count: levels, &saver)
            var checker = Checker(storage: storage, expected: saver.expected)
            try await visitLevels(from: Level0.self, count: levels, &checker)
            #expect(checker.mismatches == [])
            // deleteAll of "Nul" leaves "Nul\0X" alone, and of "A" leaves "A.b" alone.
            try await storage.deleteAll(Named<Level0>.self)
            try await storage.deleteAll(Named<Deeper<Deeper<Level0>>>.self)
            var expected = saver.expected
            expected["Nul"] = 0
            expected["A"] = 0
            checker = Checker(storage: storage, expected: expected)
            try await visitLevels(from: Level0.self, count: levels, &checker)
            #expect(checker.mismatches == [])
            #expect(try await verifyProblems(storage) == [])
        }
        // The CLI lists every name, NULs and all, as a distinct type.
        let maintenance = try await StoreMaintenance(directory: storeFilesDirectory(directory))
        #expect(Set(maintenance.types().map(\.name)).count == levels)
    }

    @Test func declarationsTheStoreCannotHoldAreInvalidOnFirstUse() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        func reason(_ body: () async throws -> Void) async -> String? {
            do {
                try await body()
                return nil
            } catch LocalStorageError.invalidDeclaration(let reason) {
                return reason
            } catch {
                return "other error: \(error)"
            }
        }
        let empty = await reason { try await storage.save(EmptyName(id: "1")) }
        #expect(empty?.contains("EmptyName") == true && empty?.contains("storageName must not be empty") == true)
        let emptyIndex = await reason { _ = try await storage.fetch(EmptyIndexName.self, id: "1") }
        #expect(emptyIndex?.contains("EmptyIndexName") == true && emptyIndex?.contains("empty name") == true)
        let twice = await reason { try await storage.save(TwoIndexesOneName(id: "1", age: 3)) }
        #expect(twice?.contains("TwoIndexesOneName") == true && twice?.contains("two indexes named \"age\"") == true)
        let many = await reason { _ = try await storage.count(TooManyIndexes.self) }
        #expect(many?.contains("65 indexes; at most 64") == true)
        let long = await reason { try await storage.save(LongName(id: "1")) }
        #expect(long?.contains("501 bytes") == true)
        // Nothing of them reached the store.
        #expect(try storage.core.storedTypeInfos().isEmpty)
    }

    /// A change stream of a type the store cannot hold ends at once: it waited for ever (trial104 D1), while every
    /// other use of the type throws `invalidDeclaration`.
    @Test(.timeLimit(.minutes(5))) func aChangeStreamOfADeclarationTheStoreCannotHoldEnds() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        var events = 0
        for await _ in storage.changes(of: EmptyName.self) { events += 1 }
        for await _ in storage.changes(of: TwoIndexesOneName.self) { events += 1 }
        #expect(events == 0)
        #expect(await eventually { storage.core.liveQueries.observerCount == 0 })
        // The store goes on: a valid type's stream gets its changes.
        var changes = storage.changes(of: Note.self).makeAsyncIterator()
        try await storage.save(Note(id: "a", text: "1"))
        #expect(await changes.next() == .inserted(Note(id: "a", text: "1")))
    }

    struct SixteenSaver: LevelVisitor {
        let storage: LocalStorage
        var saved = 0
        var failure: String?

        mutating func visit<Level: NamedLevel>(_ level: Level.Type) async throws {
            guard failure == nil else { return }
            do {
                try await storage.save(Sixteen<Level>(id: "r", value: Level.depth))
                saved += 1
            } catch LocalStorageError.invalidDeclaration(let reason) {
                failure = reason
            }
        }
    }

    @Test func twoHundredTypesOfSixteenIndexesFitAndTheNextFailsWithTheFigures() async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            var saver = SixteenSaver(storage: storage)
            try await visitLevels(from: Level0.self, count: 210, &saver)
            #expect(saver.saved == Environment.typesOfSixteenIndexes)
            #expect(saver.saved >= 200)
            let failure = try #require(saver.failure)
            #expect(
                failure.contains("sixteen.\(saver.saved)") && failure.contains("20 databases")
                    && failure.contains("at most 4096"), "\(failure)")
            // The store still works for the types it holds.
            #expect(try await storage.count(Sixteen<Level0>.self, matching: [.equals("i3", 3)]) == 1)
        }
    }

    /// The room is the store's, not the process's: types other processes registered count, though this one never
    /// opened their databases (trial107 A1: two processes registered 206 types of 16 indexes, and then no process, the
    /// CLI's included, could open the store's every type again).
    @Test func typesAnotherProcessRegisteredCountTowardsTheRoom() async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            // 203 types of 16 indexes registered the way another process's first use registers them.
            let declaration = IndexDeclaration(entries: (0..<16).map { .init(name: "i\($0)", kind: .number) })
            let meta = storage.core.meta
            let created = try storage.core.environment.write { txn in
                try (0..<203).flatMap { number in
                    let (info, _) = try TypeRegistry.register(
                        "elsewhere.\(number)", declaration: declaration, version: 1, meta: meta, txn: txn,
                        mayRaiseLayout: { false })
                    // Its databases, as that process's registration creates them.
                    return try TypeSchema.databaseNames(of: info).compactMap { try txn.openDatabase($0, create: true) }
                }
            }
            // This process never opened them: their handles go back once committed.
            for database in created { storage.core.environment.closeDatabaseForTests(database) }
            // 203 × 20 + 20 + 12 = 4,092 databases fit in 4,096; another 20 do not.
            try await storage.save(Sixteen<Level0>(id: "r", value: 0))
            let refused = await #expect(throws: LocalStorageError.self) {
                try await storage.save(Sixteen<Deeper<Level0>>(id: "r", value: 1))
            }
            guard case .invalidDeclaration(let reason) = refused else {
                Issue.record("expected invalidDeclaration, got \(String(describing: refused))")
                return
            }
            #expect(reason.contains("sixteen.1") && reason.contains("20 databases"), "\(reason)")
        }
        // Every type the store holds opens in one process, as the CLI's commands open them.
        let maintenance = try await StoreMaintenance(directory: storeFilesDirectory(directory))
        #expect(maintenance.types().count == 204)
        #expect(try maintenance.verify().problems.isEmpty)
    }
}
