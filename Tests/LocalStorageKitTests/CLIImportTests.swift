import CLMDB
import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#endif

/// `import` is all or nothing and checks what it reads against the type (issue 21): a failed import
/// leaves nothing behind.
@Suite struct CLIImportTests {
    @Test func failedImportIntoANewStoreLeavesNothingBehind() async throws {
        let store = try await IntegrityStore { storage in try await storage.save(Note(id: "n1", text: "one")) }
        let exported = try await store.run(["export"]).stdout
        let file = store.directory.appendingPathComponent("bad.jsonl")
        try Data((exported + "{\"type\":\"Note\",\"id\":\"x\"}\n").utf8).write(to: file)
        let target = store.directory.appendingPathComponent("new/store")
        let result = try await store.run(["import", file.path, "--store", target.path])
        #expect(result.status == 1)
        #expect(!FileManager.default.fileExists(atPath: store.directory.appendingPathComponent("new").path))
        // An existing but empty directory stays, without store files.
        let empty = store.directory.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        #expect(try await store.run(["import", file.path, "--store", empty.path]).status == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty.path).isEmpty)
    }

    @Test func importThatFailsWhileWritingWritesNothing() async throws {
        let store = try await IntegrityStore { storage in try await storage.save(Note(id: "n1", text: "one")) }
        let lines = try await store.run(["export"]).stdout.split(separator: "\n").map(String.init)
        let (typeLine, recordLine) = (lines[0], lines[1])
        // More records than one old batch of 10,000, then a record of a type whose description in the
        // store cannot be read: the line checks pass, the write fails at the end.
        var file = typeLine + "\n"
        let around = recordLine.components(separatedBy: "\"n1\"")
        for n in 0..<10_050 { file += around.joined(separator: "\"bulk_\(n)\"") + "\n" }
        file += #"{"indexes":[],"signature":0,"type":"Broken","version":1}"# + "\n"
        file += recordLine.replacingOccurrences(of: "\"type\":\"Note\"", with: "\"type\":\"Broken\"") + "\n"
        let url = store.directory.appendingPathComponent("big.jsonl")
        try Data(file.utf8).write(to: url)
        try store.storage.core.environment.write { txn in
            try txn.put(store.storage.core.meta, key: TypeInfo.key("Broken"), value: Array("{damaged".utf8))
        }
        let result = try await store.run(["import", url.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("Broken"))
        #expect(try await store.storage.count(Note.self) == 1)
        #expect(try await store.storage.fetch(Note.self, id: "bulk_0") == nil)
    }

    /// Edits of one exported Product line (the first match: the outer fields come before the payload)
    /// that make it disagree with its type, and the message for each.
    static let disagreeingEdits: [(find: String, replace: String, message: String)] = [
        (
            "\"id\":\"sku_4\",\"indexes\"", "\"id\":\"sku_44\",\"indexes\"",
            "the record's id \"sku_44\" differs from its payload's id \"sku_4\""
        ),
        (
            "\"price\":4.5,\"rating\"", "\"price\":99,\"rating\"",
            "index \"price\" holds 99 but the payload's \"price\" is 4.5"
        ),
        (
            "\"category\":\"electronics\",\"price\"", "\"category\":\"toys\",\"price\"",
            "index \"category\" holds toys but the payload's \"category\" is \"electronics\""
        ),
        (
            "\"indexes\":{", "\"indexes\":{\"colour\":\"red\",",
            "index \"colour\" is not declared by type \"Product\" (it has: category, price, rating)"
        ),
        (
            "\"category\":\"electronics\",\"price\"", "\"category\":7,\"price\"",
            "the value 7 of index \"category\" is not a string"
        ),
        (
            "\"version\":1,\"payload\"", "\"version\":0,\"payload\"",
            "version 0 is below 1"
        ),
        // Times before 1970 sort after every other in the time-keyed databases: the record was expired to
        // reads, never purged, and counted and returned by queries.
        ("\"format\":", "\"expiresAt\":-1,\"format\":", "expiresAt -1 is not a time after 1970"),
        ("\"createdAt\":", "\"createdAt\":-", "is before 1970"),
        // Indexed with the current declaration but without a value the payload holds: missing from the index.
        ("\"category\":\"electronics\",", "", "index \"category\" has no value but the payload's \"category\" is"),
    ]

    @Test(arguments: disagreeingEdits)
    func importRejectsARecordThatDisagreesWithItsType(
        _ edit: (find: String, replace: String, message: String)
    )
        async throws
    {
        let store = try await IntegrityStore { storage in try await storage.save(Product.sample(4)) }
        let exported = try await store.run(["export"]).stdout
        let found = try #require(exported.range(of: edit.find), "the edit \(edit.find) matches nothing in \(exported)")
        let edited = exported.replacingCharacters(in: found, with: edit.replace)
        let file = store.directory.appendingPathComponent("edited.jsonl")
        try Data(edited.utf8).write(to: file)
        let target = store.directory.appendingPathComponent("target")
        let result = try await store.run(["import", file.path, "--store", target.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("line 2: Product \"sku_4"), "\(result.stderr)")
        #expect(result.stderr.contains(edit.message), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target.path))
        // Into the existing store too: nothing changes.
        let before = try await store.run(["export"]).stdout
        #expect(try await store.run(["import", file.path]).status == 1)
        #expect(try await store.run(["export"]).stdout == before)
    }

    /// A member spelled `"p\u0061yload"` before the real one is not the payload the check reads: the check reads
    /// the bytes that are stored (review-86 #2: it read the first member named "payload" once unescaped).
    @Test func theCheckReadsThePayloadThatIsStored() async throws {
        let store = try await IntegrityStore { storage in try await storage.save(Product.sample(4)) }
        let exported = try await store.run(["export"]).stdout
        // The index value only (the first of the two places the text appears: "indexes" comes before "payload").
        let index = try #require(exported.range(of: "\"price\":4.5,\"rating\""))
        let disagreeing = exported.replacingCharacters(in: index, with: "\"price\":99,\"rating\"")
        let edited = disagreeing.replacingOccurrences(
            of: "\"payload\":{", with: "\"p\\u0061yload\":{},\"payload\":{")
        #expect(edited != disagreeing && disagreeing != exported)
        let file = store.directory.appendingPathComponent("edited.jsonl")
        try Data(edited.utf8).write(to: file)
        let result = try await store.run([
            "import", file.path, "--store", store.directory.appendingPathComponent("t").path,
        ])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("index \"price\" holds 99 but the payload's \"price\" is 4.5"), "\(result.stderr)")
    }

    @Test func noPayloadCheckAcceptsIndexesComputedDifferently() async throws {
        let store = try await IntegrityStore { storage in try await storage.save(Product.sample(4)) }
        let exported = try await store.run(["export"]).stdout
        let found = try #require(exported.range(of: "\"category\":\"electronics\",\"price\""))
        let edited = exported.replacingCharacters(in: found, with: "\"category\":\"ELECTRONICS\",\"price\"")
        let file = store.directory.appendingPathComponent("edited.jsonl")
        try Data(edited.utf8).write(to: file)
        let target = store.directory.appendingPathComponent("target")
        #expect(try await store.run(["import", file.path, "--store", target.path]).status == 1)
        let accepted = try await store.run(["import", file.path, "--no-payload-check", "--store", target.path])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(
            try await store.run(["list", "Product", "--where", "category=ELECTRONICS", "--store", target.path])
                .stdout.hasPrefix("sku_4  "))
    }

    /// A `Float` index holds the Float widened to a Double while the payload shows its shortest text: an
    /// export of such records imports again (it failed its own payload check), every value exact.
    @Test func floatIndexesSurviveAnExportAndImport() async throws {
        var random = SplitMix64(seed: 26)
        var readings = [0.1, 1.0 / 3, -2.5e-7, 3.4e38, 1e-45, 0, 16_777_217].enumerated().map { offset, value in
            FloatReading(
                id: "r\(offset)", level: Float(value), spare: offset.isMultiple(of: 2) ? Float(value) / 7 : nil)
        }
        for offset in 0..<40 {
            let level = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
            readings.append(FloatReading(id: "x\(offset)", level: level.isFinite ? level : 1, spare: Float(offset) / 3))
        }
        let store = try await IntegrityStore { storage in try await storage.save(contentsOf: readings) }
        let file = store.directory.appendingPathComponent("readings.jsonl")
        try Data(try await store.run(["export"]).stdout.utf8).write(to: file)
        let target = store.directory.appendingPathComponent("target")
        let imported = try await store.run(["import", file.path, "--store", target.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = target
        let storage = try LocalStorage(configuration: configuration)
        let back = try await storage.fetch(FloatReading.self)
        #expect(back == readings.sorted { $0.id < $1.id })
        let positive = readings.filter { $0.level > 0 }.count
        #expect(try await storage.count(FloatReading.self, matching: [.greaterThan("level", Float(0))]) == positive)
    }

    /// `export` escapes invisible characters only where they can stand in JSON: inside strings. A JSON
    /// payload stored with a tab between its tokens (imported by hand) exports as valid JSON, and the
    /// export imports again.
    @Test func anExportEscapesInvisibleCharactersAndStaysValidJSON() async throws {
        let store = try await IntegrityStore { storage in
            try await storage.save(Note(id: "n\u{202E}1", text: "a\u{202E}b"))
        }
        let exported = try await store.run(["export"]).stdout
        #expect(!exported.unicodeScalars.contains("\u{202E}") && exported.contains(#"a\u202eb"#), "\(exported)")
        let found = try #require(exported.range(of: "\"payload\":{"))
        // Stored as JSON, byte for byte, with the tab between tokens.
        let tabbed = exported.replacingCharacters(in: found, with: "\"payload\":{\t")
            .replacingOccurrences(of: "\"format\":\"binary\"", with: "\"format\":\"json\"")
        let file = store.directory.appendingPathComponent("tabbed.jsonl")
        try Data(tabbed.utf8).write(to: file)
        let target = store.directory.appendingPathComponent("target")
        let imported = try await store.run(["import", file.path, "--store", target.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        let again = try await store.run(["export", "--store", target.path])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("\"format\":\"json\"") && again.stdout.contains("{\t"), "\(again.stdout)")
        for line in again.stdout.split(separator: "\n") {
            #expect(throws: Never.self) { try JSONSerialization.jsonObject(with: Data(line.utf8)) }
        }
        #expect(!again.stdout.unicodeScalars.contains("\u{202E}") && again.stdout.contains(#"a\u202eb"#))
        let copy = store.directory.appendingPathComponent("copy.jsonl")
        try Data(again.stdout.utf8).write(to: copy)
        let reimported = try await store.run([
            "import", copy.path, "--store", store.directory.appendingPathComponent("t2").path,
        ])
        #expect(reimported.status == 0, "\(reimported.stderr)")
    }

    /// A file with two lines for one record is refused (the second would replace the first, and the import
    /// would report more records than the store holds); nothing is written.
    @Test func anImportRefusesTwoLinesForOneRecord() async throws {
        let store = try await IntegrityStore { storage in
            try await storage.save(contentsOf: [Product.sample(4), Product.sample(5)])
        }
        let lines = try await store.run(["export"]).stdout.split(separator: "\n").map(String.init)
        let file = store.directory.appendingPathComponent("twice.jsonl")
        try Data(
            (lines + [lines[1].replacingOccurrences(of: "Product 4", with: "Product 4 again")]).joined(separator: "\n")
                .utf8
        )
        .write(to: file)
        let target = store.directory.appendingPathComponent("target")
        let result = try await store.run(["import", file.path, "--store", target.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("line 4: Product \"sku_4\" is already on line 2"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }

    /// A record above its type's stored version imports: that version moves only once every record is
    /// migrated, so a store's own export can hold such records (a read migrated them one by one).
    @Test func aRecordAboveItsTypesStoredVersionImports() async throws {
        let store = try await IntegrityStore { storage in try await storage.save(Product.sample(4)) }
        let exported = try await store.run(["export"]).stdout
        let edited = exported.replacingOccurrences(of: "\"version\":1,\"payload\"", with: "\"version\":2,\"payload\"")
        #expect(edited != exported)
        let file = store.directory.appendingPathComponent("newer.jsonl")
        try Data(edited.utf8).write(to: file)
        let target = store.directory.appendingPathComponent("target")
        let result = try await store.run(["import", file.path, "--store", target.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try await store.run(["export", "--store", target.path]).stdout == edited)
    }
}

extension CLIImportTests {
    /// The store keys types and ids by bytes, so names Swift compares equal are two types (or two records).
    /// Statistics, `verify` and an export round trip count and keep every one of them; they used to fold
    /// them into one `[String: …]` entry, and an export left the second type out.
    @Test func namesThatDifferOnlyInNormalizationStayApartThroughStatisticsAndExport() async throws {
        let ids = ["\u{E9}", "e\u{301}", "x"]
        let store = try await IntegrityStore { storage in
            try await storage.save(contentsOf: ids.map { ComposedName(id: $0, text: "composed \($0)") })
            try await storage.save(contentsOf: ids.prefix(2).map { DecomposedName(id: $0, text: "decomposed \($0)") })
            #expect(try await storage.count(ComposedName.self) == 3)
            #expect(try await storage.count(DecomposedName.self) == 2)
            let statistics = try await storage.statistics()
            #expect(statistics.records == 5)
            #expect(statistics.types.count == 1 && statistics.types["caf\u{E9}"]?.records == 5)
        }
        let verified = try await store.run(["verify"])
        #expect(verified.status == 0 && verified.stdout.contains("2 types, 5 records"), "\(verified.stdout)")
        let exported = try await store.run(["export"])
        #expect(exported.status == 0, "\(exported.stderr)")
        let lines = exported.stdout.split(separator: "\n")
        #expect(lines.count == 7, "\(exported.stdout)")
        let file = store.directory.appendingPathComponent("names.jsonl")
        try Data(exported.stdout.utf8).write(to: file)
        let target = store.directory.appendingPathComponent("target")
        let imported = try await store.run(["import", file.path, "--store", target.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        let again = try await store.run(["export", "--store", target.path])
        #expect(Set(again.stdout.split(separator: "\n")) == Set(lines), "\(again.stdout)")
        // A type named in either form on the command line is found; its own spelling first.
        let decomposed = try await store.run(["export", "cafe\u{301}"])
        #expect(decomposed.stdout.split(separator: "\n").count == 3, "\(decomposed.stdout)")
    }
}

/// A record with `Float` indexes, one of them optional.
struct FloatReading: LocalStorageIndexed, Equatable {
    let id: String
    var level: Float
    var spare: Float?

    static var storageIndexes: [StorageIndex<Self>] {
        [.number("level") { $0.level }, StorageIndex("spare", \.spare)]
    }
}
