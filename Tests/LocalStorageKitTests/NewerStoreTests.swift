import CLMDB
import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @_spi(Testing) @testable import LocalStorageKit

/// A record type as a newer app version writes it (version 3) and as this one knows it (version 2).
struct Sheet3: LocalStorageVersioned, LocalStorageIndexed, Equatable {
    let id: String
    var title: String
    static var storageName: String { "Sheet" }
    static var currentVersion: Int { 3 }
    static var migrations: [StorageMigration] { [] }
    static var storageIndexes: [StorageIndex<Self>] { [.string("title") { $0.title }] }
}

struct Sheet2: LocalStorageVersioned, LocalStorageIndexed, Equatable {
    let id: String
    var title: String
    static var storageName: String { "Sheet" }
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] { [] }
    static var storageIndexes: [StorageIndex<Self>] { [.string("title") { $0.title }] }
}

/// Version 2 with a field its records lack: a model changed without a migration.
struct Sheet2Pages: LocalStorageVersioned, LocalStorageIndexed, Equatable {
    let id: String
    var title: String
    var pages: Int
    static var storageName: String { "Sheet" }
    static var currentVersion: Int { 2 }
    static var migrations: [StorageMigration] { [] }
    static var storageIndexes: [StorageIndex<Self>] { [.string("title") { $0.title }] }
}

/// `Sheet` as a newer app version declares it: another index than this version's `title`.
struct Sheet3Pages: LocalStorageVersioned, LocalStorageIndexed, Equatable {
    let id: String
    var title: String
    var pages: Int
    static var storageName: String { "Sheet" }
    static var currentVersion: Int { 3 }
    static var migrations: [StorageMigration] { [] }
    static var storageIndexes: [StorageIndex<Self>] { [.number("pages") { $0.pages }] }
}

/// What this version cannot understand it never rewrites: a damaged or newer type description, a
/// record written at a newer version, a newer store layout. And a damaged record that is replaced or
/// deleted leaves no index entry behind.
@Suite struct NewerStoreTests {
    private func meta(_ storage: LocalStorage, _ key: [UInt8]) throws -> [UInt8]? {
        try storage.core.environment.read { txn in try txn.get(storage.core.meta, key: key).map(Array.init) }
    }

    @Test(arguments: ["garbage", "newerKind"])
    func anUnreadableTypeDescriptionIsNeverOverwritten(damage: String) async throws {
        let directory = temporaryDirectory()
        let key = Array("t.Product".utf8)
        let damaged: [UInt8]
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            try await storage.save(Product.sample(1))
            let stored = try #require(try meta(storage, key))
            if damage == "garbage" {
                damaged = Array("{not json".utf8)
            } else {
                // A newer version's index kind (3) in an otherwise valid description.
                let text = String(decoding: stored, as: UTF8.self)
                damaged = Array(text.replacingOccurrences(of: "\"kind\":2", with: "\"kind\":3").utf8)
                #expect(damaged != stored)
            }
            let metaDBI = storage.core.meta
            try await storage.core.writer.perform { context in try context.txn.put(metaDBI, key: key, value: damaged) }
        }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            let reason = await decodingFailure { try await storage.save(Product.sample(2)) }
            #expect(reason?.contains("description of type \"Product\" cannot be read") == true, "\(reason ?? "")")
            await #expect(throws: LocalStorageError.self) { try await storage.fetch(Product.self, id: "sku_1") }
            #expect(try meta(storage, key) == damaged)
            // The maintenance tool names it as unreadable, and leaves it too.
            let maintenance = try await StoreMaintenance(directory: storage.core.directory)
            #expect(maintenance.unreadableTypeNames == ["Product"])
            #expect(try maintenance.verify().problems.map(\.kind) == [.unreadableType])
            #expect(try meta(storage, key) == damaged)
        }
        // A repair reports a newer version's description and salvages nothing: a salvage cannot read the type and
        // dropped all its records. (Garbage is damage: a salvage keeps what else it can read, DamagedTreeTests.)
        guard damage == "newerKind" else { return }
        let repair = try await CLIResult.run(["verify", "--repair", "--store", directory.path], environment: nil)
        #expect(repair.status == 1, "\(repair.stdout)\(repair.stderr)")
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try meta(storage, key) == damaged)
        }
        // The record's id is still in the data file (a salvage writes a fresh file without it).
        let data = try Data(contentsOf: storeFilesDirectory(directory).appendingPathComponent("data.mdb"))
        #expect(data.range(of: Data("sku_1".utf8)) != nil)
        // The salvage itself, which a repair runs at once on a file with a damaged page, refuses too: it dropped
        // the type and its 1 record, replaced the file and said "no problems" (review-cli-52, 2).
        await #expect(throws: MaintenanceError.self) {
            try await StoreMaintenance.salvage(directory: storeFilesDirectory(directory))
        }
        let after = try Data(contentsOf: storeFilesDirectory(directory).appendingPathComponent("data.mdb"))
        #expect(after == data)
    }

    @Test func aRecordOfANewerVersionIsReportedAndNeverOverwritten() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Sheet3(id: "s1", title: "from the future"))
        let read = await decodingFailure { _ = try await storage.fetch(Sheet2.self, id: "s1") }
        #expect(read?.contains("version 3, newer than its current version 2") == true, "\(read ?? "")")
        let write = await decodingFailure { try await storage.save(Sheet2(id: "s1", title: "older")) }
        #expect(write?.contains("not overwritten") == true, "\(write ?? "")")
        // Both name the storage name the write's error has (the read named the Swift type only: trial83 F5).
        #expect(read?.hasPrefix("Sheet2 (storageName \"Sheet\") \"s1\"") == true, "\(read ?? "")")
        #expect(write?.contains("Sheet \"s1\"") == true, "\(write ?? "")")
        let update = await decodingFailure { try await storage.update(Sheet2.self, id: "s1") { $0.title = "older" } }
        #expect(update != nil)
        // A query of the older type that meets it throws, naming it (re-indexing included).
        let query = await decodingFailure {
            _ = try await storage.fetch(Sheet2.self, matching: [.hasPrefix("title", "")])
        }
        #expect(query?.contains("\"s1\"") == true, "\(query ?? "")")
        #expect(try await storage.fetch(Sheet3.self, id: "s1") == Sheet3(id: "s1", title: "from the future"))
        #expect(try await storage.metadata(Sheet3.self, id: "s1")?.version == 3)
    }

    /// A query that checks a second condition on record headers and meets a newer version's record says so; it
    /// called the record damaged and advised deleting it or running `verify --repair` (/work/trial60.md).
    @Test func aQueryMeetingANewerRecordSaysSoRatherThanDamaged() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: (0..<30).map(Product.sample))
        let schema = try await storage.core.schema(for: Product.self)
        let key = Array("sku_3".utf8)
        var newer = try storage.core.environment.read { txn in try txn.get(schema.records, key: key).map(Array.init) }
        newer?[0] = 0xA9
        let bytes = try #require(newer)
        try await storage.core.writer.perform { context in try context.txn.put(schema.records, key: key, value: bytes) }
        let failure = await decodingFailure {
            _ = try await storage.fetch(
                Product.self, matching: [.equals("category", "books"), .atLeast("price", 0.0)],
                orderedBy: .ascending("price"))
        }
        #expect(failure?.contains("newer version of LocalStorageKit") == true, "\(failure ?? "")")
        #expect(failure?.contains("damaged") == false, "\(failure ?? "")")
    }

    /// A record in a later header layout (magic 0xA9) or with a payload format this version does not know is a
    /// newer version's, not damage: reads say so, a save does not overwrite it, `verify` reports it as newer
    /// and `repair` leaves it (it was reported as damaged and removed).
    @Test(arguments: ["format", "layout"])
    func aRecordInANewerFormatIsReportedAndNeverOverwritten(change: String) async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(contentsOf: [Note(id: "n1", text: "one"), Note(id: "n2", text: "two")])
        try await keepUpdateOrder(Note.self, in: storage)
        var newer = try await EncryptionTests.storedNote("n1", in: storage)
        if change == "format" {
            newer[1] = (newer[1] & PayloadEnvelope.mask) | 0x0F
        } else {
            newer[0] = 0xA9
        }
        try await EncryptionTests.storeNote(newer, as: "n1", in: storage)

        let read = await decodingFailure { _ = try await storage.fetch(Note.self, id: "n1") }
        #expect(read?.contains("newer version of LocalStorageKit") == true, "\(read ?? "")")
        let write = await decodingFailure { try await storage.save(Note(id: "n1", text: "older")) }
        #expect(write?.contains("not overwritten") == true, "\(write ?? "")")

        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        #expect(try maintenance.verify().problems.map(\.kind) == [.newerRecord])
        let figures = try #require(try maintenance.statistics().types.first { $0.name == "Note" })
        #expect(figures.newer == 1 && figures.damaged == 0)
        // n2's update-time entry goes missing: the repair rebuilds the type's entries, and the newer record
        // keeps its own (they were emptied with the rest and never added back, as its header cannot be read).
        let schema = try await storage.core.schema(for: Note.self)
        func updateEntries(of id: String) throws -> Int {
            try storage.core.environment.read { txn in
                try RecordWriter.entries(of: schema.updated, pointingAt: { $0.elementsEqual(id.utf8) }, txn: txn).count
            }
        }
        try #require(try updateEntries(of: "n1") == 1)
        try await storage.core.writer.perform { context in
            try txnDeleteAll(pointingAt: "n2", in: schema.updated, txn: context.txn)
        }
        let repaired = try await maintenance.repair()
        #expect(repaired.removedRecords.isEmpty)
        #expect(try updateEntries(of: "n1") == 1)
        #expect(try updateEntries(of: "n2") == 1)
        #expect(try maintenance.list("Note").damaged.map(\.kind) == [.newerRecord])
        #expect(try await EncryptionTests.storedNote("n1", in: storage) == newer)
        #expect(try await storage.fetch(Note.self, id: "n2")?.text == "two")
        // Deleting it is the app's choice, and works.
        try await storage.delete(Note.self, id: "n1")
        #expect(try await StoreMaintenance(directory: storage.core.directory).verify().isClean)
    }

    /// A damaged record whose key is not UTF-8 cannot be deleted by its id (the id names another key): the
    /// repair threw `recordNotFound` there, with the deletes before it committed and no entry rebuilt. It
    /// now leaves that record (the report after names it) and does the rest.
    @Test func aRepairGoesOnPastADamagedRecordItCannotName() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration(temporaryDirectory()))
        try await storage.save(contentsOf: [Note(id: "n1", text: "one"), Note(id: "n2", text: "two")])
        try await keepUpdateOrder(Note.self, in: storage)
        let schema = try await storage.core.schema(for: Note.self)
        try await storage.core.writer.perform { context in
            try context.txn.put(schema.records, key: [0x6E, 0xFF], value: [0xDE, 0xAD])
            try txnDeleteAll(pointingAt: "n2", in: schema.updated, txn: context.txn)
        }
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        let after = try await maintenance.repair()
        #expect(after.problems.map(\.kind) == [.damagedRecord], "\(after.problems)")
        #expect(after.repairedTypes == ["Note"])
        #expect(try await storage.fetch(Note.self, id: "n2")?.text == "two")
    }

    /// A newer version that declares other indexes leaves records this version cannot re-index: they are
    /// in none of its indexes, so every indexed read says so instead of answering without them.
    @Test func recordsANewerDeclarationIndexedMakeOlderIndexedReadsThrow() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: [
            Sheet3Pages(id: "s1", title: "alpha", pages: 3), Sheet3Pages(id: "s2", title: "beta", pages: 4),
        ])
        let everything: [StorageIndexFilter] = [.hasPrefix("title", "")]
        var failures: [String?] = []
        failures.append(await decodingFailure { _ = try await storage.fetch(Sheet2.self, matching: everything) })
        failures.append(await decodingFailure { _ = try await storage.count(Sheet2.self, matching: everything) })
        failures.append(
            await decodingFailure {
                _ = try await storage.page(Sheet2.self, matching: everything, page: 1, pageSize: 10)
            })
        failures.append(
            await decodingFailure {
                _ = try await storage.read { tx in try tx.fetch(Sheet2.self, matching: [.equals("title", "alpha")]) }
            })
        failures.append(
            await decodingFailure {
                _ = try await storage.write { tx in try tx.count(Sheet2.self, matching: everything) }
            })
        for failure in failures {
            #expect(failure?.contains("newer than") == true, "\(failure ?? "no error")")
            #expect(failure?.contains("Sheet \"s") == true, "\(failure ?? "no error")")
        }
        // The newer version still reads its own records through its own index.
        #expect(try await storage.count(Sheet3Pages.self, matching: [.atLeast("pages", 4)]) == 1)
        // Once the records this version cannot read are gone, its queries answer again.
        try await storage.delete(Sheet3Pages.self, id: "s1")
        try await storage.delete(Sheet3Pages.self, id: "s2")
        try await storage.save(Sheet2(id: "s3", title: "gamma"))
        #expect(try await storage.fetch(Sheet2.self, matching: everything) == [Sheet2(id: "s3", title: "gamma")])
    }

    @Test func aNewerStoreLayoutFailsToOpenAndIsLeftAlone() async throws {
        let directory = temporaryDirectory()
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            try await storage.save(Note(id: "n", text: "kept"))
            let metaDBI = storage.core.meta
            try await storage.core.writer.perform { context in
                try context.txn.put(
                    metaDBI, key: TypeRegistry.layoutKey, value: Array("\(TypeRegistry.layout + 1)".utf8))
            }
        }
        do {
            _ = try LocalStorage(configuration: diskConfiguration(directory))
            Issue.record("a store of a newer layout opened")
        } catch LocalStorageError.openFailed(_, let reason) {
            #expect(reason.contains("layout \(TypeRegistry.layout + 1), written by a newer version"), "\(reason)")
        }
    }

    /// Compaction at open asks what the open asks of the layout marker: a store the open refuses (a newer layout,
    /// a damaged marker, a layout older than this version reads) was compacted and swapped first (review-74 #1).
    /// A damaged store identity, which the open refuses too, was compacted first as well (review-75 #4).
    @Test(arguments: ["\(TypeRegistry.layout + 1)", "5x", "1", "identity"])
    func compactionAtOpenLeavesAStoreOfAnotherLayoutAlone(marker: String) async throws {
        let directory = temporaryDirectory()
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            let text = String(repeating: "x", count: 1_000)
            try await storage.save(contentsOf: (0..<2_000).map { Note(id: "n\($0)", text: text) })
            try await storage.deleteAll(Note.self)
            let metaDBI = storage.core.meta
            try await storage.core.writer.perform { context in
                if marker == "identity" {
                    try context.txn.put(metaDBI, key: ChangeLog.identityKey, value: [1, 2, 3])
                } else {
                    try context.txn.put(metaDBI, key: TypeRegistry.layoutKey, value: Array(marker.utf8))
                }
            }
        }
        try expectRefusedWithoutCompaction(directory)
    }

    @Test(arguments: ["save", "delete", "purge"])
    func aDamagedRecordThatIsReplacedOrDeletedLeavesNoEntryBehind(action: String) async throws {
        let directory = temporaryDirectory()
        let clock = VirtualClock()
        var configuration = diskConfiguration(directory)
        configuration.clock = clock
        try await withStore(configuration) { storage async throws in
            try await storage.save(
                contentsOf: (0..<5).map(Product.sample),
                expiration: action == "purge" ? .seconds(1) : .hours(1))
            let schema = try await storage.core.schema(for: Product.self)
            try await storage.core.writer.perform { context in
                try context.txn.put(schema.records, key: Array("sku_2".utf8), value: [0xA7, 0x02, 0xFF])
            }
            switch action {
            case "save": try await storage.save(Product.sample(2))
            case "delete": try await storage.delete(Product.self, id: "sku_2")
            default:
                clock.advance(by: .milliseconds(1100))
                #expect(try await storage.purgeExpired() == 5)
            }
            #expect(try await verifyProblems(storage) == [])
            let expected = action == "save" ? 5 : action == "delete" ? 4 : 0
            #expect(try await storage.count(Product.self, matching: [.atLeast("price", 0)]) == expected)
        }
    }

    /// Type descriptions are read with the payload codec's JSON parser, not `JSONDecoder`: on random
    /// descriptions (signatures over the whole `UInt64` range, names with quotes, escapes and any plane)
    /// both read the same value from what `JSONEncoder` wrote.
    @Test func typeDescriptionsReadAsJSONDecoderReadsThem() throws {
        var random = SplitMix64(seed: 0x7E1F0)
        let alphabet: [String] = ["a", "Z", "0", "_", " ", "\"", "\\", "/", "\n", "\u{0}", "é", "名", "🦆", "\u{FEFF}"]
        func name(_ random: inout SplitMix64) -> String {
            (0..<Int.random(in: 1...12, using: &random)).map { _ in
                alphabet[Int.random(in: 0..<alphabet.count, using: &random)]
            }.joined()
        }
        for round in 0..<300 {
            let slots = (0..<Int.random(in: 0...6, using: &random)).map { number in
                TypeInfo.Slot(
                    name: name(&random), kind: Bool.random(using: &random) ? .string : .number,
                    number: UInt32(number + 1))
            }
            let signatures = [UInt64.max, 0, 1 << 63, UInt64(Int64.max)] + (0..<3).map { _ in random.next() }
            let info = TypeInfo(
                name: name(&random), number: UInt32.random(in: 1...UInt32.max, using: &random),
                indexes: slots.map { IndexDeclaration.Entry(name: $0.name, kind: $0.kind) },
                signature: signatures[round % signatures.count],
                version: Int.random(in: Int.min...Int.max, using: &random), slots: slots,
                declarations: (0..<Int.random(in: 0...3, using: &random)).map { _ in
                    TypeInfo.Declaration(signature: random.next(), slots: slots.map(\.number).shuffled(using: &random))
                })
            let json = try JSONEncoder().encode(info)
            let read = try json.withUnsafeBytes { try TypeRegistry.decode($0, name: info.name) }
            #expect(read == info)
            #expect(read == (try JSONDecoder().decode(TypeInfo.self, from: json)))
        }
        // What JSONDecoder refuses, so does the store (a newer index kind, a truncated description).
        let newer = Array(
            (#"{"name":"T","number":1,"indexes":[{"name":"a","kind":3}],"signature":1,"version":1,"# + #""slots":[],"#
                + #""declarations":[]}"#).utf8)
        for bytes in [newer, Array(newer.dropLast()), Array(#"{"name":"T"}"#.utf8)] {
            #expect(throws: LocalStorageError.self) {
                try bytes.withUnsafeBytes { try TypeRegistry.decode($0, name: "T") }
            }
            #expect(throws: (any Error).self) { try JSONDecoder().decode(TypeInfo.self, from: Data(bytes)) }
        }
    }
}

/// Deletes every entry of `database` whose value is `id` (an entry lost to damage, for a repair to rebuild).
func txnDeleteAll(pointingAt id: String, in database: Database, txn: Transaction) throws {
    for entry in try RecordWriter.entries(of: database, pointingAt: { $0.elementsEqual(id.utf8) }, txn: txn) {
        try txn.delete(database, key: entry.key, value: entry.id)
    }
}

extension NewerStoreTests {
    /// A store without its identity in `meta` (written by an open that was killed before the identity existed, or
    /// one whose entry was removed) gets one at its next open, which every later open reads: an open that needs
    /// nothing written reads its state in a read transaction, and one that did so here would make up an identity
    /// each time, so that change tokens of one open were another store's to the next.
    @Test func aStoreWithoutItsIdentityGetsOneThatLaterOpensKeep() async throws {
        let directory = temporaryDirectory()
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            try await storage.save(Note(id: "a", text: "one"))
            let metaDBI = storage.core.meta
            let removed = try await storage.core.writer.perform { context in
                try context.txn.delete(metaDBI, key: ChangeLog.identityKey)
            }
            #expect(removed)
        }
        var identities: [UInt64] = []
        for _ in 0..<2 {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            identities.append(storage.core.changeLog.store)
            let stored = try storage.core.environment.read { txn in
                try txn.get(storage.core.meta, key: ChangeLog.identityKey).map { Array($0) }
            }
            #expect(stored?.count == 8)
        }
        #expect(identities[0] == identities[1])
    }
}
