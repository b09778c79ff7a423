import CLMDB
import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// The `localstorage` executable, run as a separate process against real stores made by the library.
@Suite struct CLITests {
    // MARK: - Reading commands

    @Test func statsTypesListAndGetDescribeTheStore() async throws {
        let fixture = try await Fixture()
        let stats = try await fixture.run(["stats", "--json"])
        #expect(stats.status == 0)
        let figures = try JSONDecoder().decode(StoreStatistics.self, from: Data(stats.stdout.utf8))
        let product = try #require(figures.types.first { $0.name == "Product" })
        #expect(product.records == 12)
        #expect(product.expired == 2)
        #expect(product.indexes.map(\.name) == ["category", "price", "rating"])
        #expect(product.indexes.allSatisfy { $0.entries == 12 })
        #expect(figures.readersInUse >= 1)  // The fixture's store is open in this process.
        #expect(try await fixture.run(["stats"]).stdout.contains("Product: 12 records"))

        let types = try await fixture.run(["types"])
        #expect(types.status == 0)
        #expect(types.stdout.contains("Product  version 1"))
        #expect(types.stdout.contains("  price  number"))

        let list = try await fixture.run([
            "list", "Product", "--where", "category=books", "--order", "-price",
            "--limit", "2", "--json",
        ])
        #expect(list.status == 0, "\(list.stderr)")
        let listing = try JSONDecoder().decode(RecordListing.self, from: Data(list.stdout.utf8))
        #expect(listing.records.map(\.id) == ["sku_9", "sku_6"])
        #expect(listing.records.first?.indexes["price"] == .double(9.5))
        let byID = try await fixture.run(["list", "Product", "--offset", "10"])
        #expect(byID.stdout.split(separator: "\n").map { $0.prefix { $0 != " " } } == ["sku_8", "sku_9"])

        let get = try await fixture.run(["get", "Product", "sku_4"])
        #expect(get.status == 0)
        #expect(get.stdout.contains("\"title\": \"Product 4\""))
        #expect(get.stdout.hasPrefix("{"))  // The payload alone (metadata with --json).
        let missing = try await fixture.run(["get", "Product", "nope"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "localstorage: error: Product has no record \"nope\"\n")
    }

    // MARK: - Verify

    @Test func verifyReportsACorruptedRecordWhileOtherCommandsKeepWorking() async throws {
        let fixture = try await Fixture()
        let schema = try await fixture.storage.core.schema(for: Product.self)
        try fixture.storage.core.environment.write { txn in
            try txn.put(schema.records, key: Array("sku_3".utf8), value: [0xDE, 0xAD, 0xBE, 0xEF])
        }
        let verify = try await fixture.run(["verify"])
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("Product \"sku_3\": Decoding failed: the stored bytes are not a"))
        #expect(verify.stdout.contains("1 problem."))
        let json = try await fixture.run(["verify", "--json"])
        let report = try JSONDecoder().decode(VerifyReport.self, from: Data(json.stdout.utf8))
        #expect(report.problems.map(\.id) == ["sku_3"])
        #expect(report.problems.first?.kind == .damagedRecord)

        let stats = try await fixture.run(["stats"])
        #expect(stats.status == 0)
        #expect(stats.stdout.contains("1 damaged record(s)"), "\(stats.stdout)")
        let list = try await fixture.run(["list", "Product"])
        #expect(list.status == 0)
        #expect(list.stdout.contains("sku_3  DAMAGED"))
        #expect(list.stdout.contains("sku_4  updated"))
        let export = try await fixture.run(["export", "Product"])
        #expect(export.status == 1)
        #expect(export.stdout.split(separator: "\n").count == 12)  // The type line and 11 readable records.
        #expect(export.stderr.contains("skipped Product \"sku_3\""))
        #expect(try await fixture.run(["get", "Product", "sku_4"]).status == 0)
        // Deleting the damaged record finds its entries without its header (a walk), so none dangle.
        #expect(try await fixture.run(["delete", "Product", "sku_3"]).status == 0)
        let after = try await fixture.run(["verify"])
        #expect(after.status == 0, "\(after.stdout)")
    }

    @Test func verifyFindsMissingAndStrayIndexEntries() async throws {
        let fixture = try await Fixture()
        let schema = try await fixture.storage.core.schema(for: Product.self)
        let category = try #require(schema.index(named: "category")).dbi
        let price = try #require(schema.index(named: "price")).dbi
        try fixture.storage.core.environment.write { txn in
            try txn.delete(category, key: OrderedKey.encodeString("toys").bytes, value: Array("sku_2".utf8))
            try txn.put(price, key: try #require(OrderedKey.encodeNumber(.int(7))), value: Array("ghost".utf8))
        }
        let report = try await fixture.maintenanceReport()
        #expect(report.map(\.kind) == [.missingEntry, .danglingEntry])
        #expect(report.map(\.id) == ["sku_2", "ghost"])
        #expect(try await fixture.run(["verify", "--repair"]).status == 0)
        #expect(try await fixture.run(["verify"]).status == 0)
    }

    // MARK: - Writing commands

    @Test func purgeDeleteClearAndCompact() async throws {
        let fixture = try await Fixture()
        let purge = try await fixture.run(["purge-expired", "--json"])
        #expect(purge.status == 0)
        let purged = try JSONDecoder().decode([String: Int].self, from: Data(purge.stdout.utf8))
        #expect(purged == ["Note": 0, "Product": 2, "User": 0])
        #expect(try await fixture.storage.count(Product.self) == 10)

        #expect(try await fixture.run(["delete", "Product", "sku_1"]).stdout == "Deleted Product \"sku_1\".\n")
        #expect(try await fixture.storage.fetch(Product.self, id: "sku_1") == nil)
        #expect(try await fixture.run(["delete", "Product", "sku_1"]).status == 1)

        let unconfirmed = try await fixture.run(["clear", "User"])
        #expect(unconfirmed.status == 2)
        #expect(try await fixture.storage.count(User.self) == 3)
        #expect(try await fixture.run(["clear", "User", "--yes"]).stdout == "Deleted 3 records of User.\n")
        #expect(try await fixture.storage.count(User.self) == 0)

        let copy = fixture.directory.appendingPathComponent("compacted")
        let compact = try await fixture.run(["compact", "--output", copy.path])
        #expect(compact.status == 0, "\(compact.stderr)")
        #expect(compact.stdout.contains("no problems."))
        let copied = try await fixture.run(["list", "Product", "--store", copy.path])
        #expect(copied.stdout.split(separator: "\n").count == 9)
        #expect(try await fixture.run(["compact", "--output", copy.path]).status == 1)  // Never overwrites a store.
    }

    @Test func exportThenImportGivesAnIdenticalCleanStore() async throws {
        let fixture = try await Fixture()
        let first = fixture.directory.appendingPathComponent("first.jsonl")
        #expect(try await fixture.run(["export", "--output", first.path]).status == 0)
        let lines = try String(contentsOf: first, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 20)  // Three type lines; 12 Product, 3 User and 2 Note records.
        #expect(lines.contains { $0.contains("\"id\":\"usr_big\"") && $0.contains("\"age\":9007199254740993") })

        let copy = fixture.directory.appendingPathComponent("copy")
        let imported = try await fixture.run(["import", first.path, "--store", copy.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout == "Imported 17 records of Note, Product, User.\n")
        let second = fixture.directory.appendingPathComponent("second.jsonl")
        #expect(try await fixture.run(["export", "--output", second.path, "--store", copy.path]).status == 0)
        #expect(try Data(contentsOf: first) == Data(contentsOf: second))
        #expect(try await fixture.run(["verify", "--store", copy.path]).status == 0)
        // Importing again replaces every record in place.
        #expect(try await fixture.run(["import", first.path, "--store", copy.path]).status == 0)
        #expect(try await fixture.run(["verify", "--store", copy.path]).status == 0)

        // The app reads the imported store like the original.
        var configuration = diskConfiguration()
        configuration.databaseDirectory = fixture.directory.appendingPathComponent("app")
        try FileManager.default.createDirectory(at: configuration.storeDirectory, withIntermediateDirectories: true)
        #expect(
            try await fixture.run(["import", first.path, "--store", configuration.storeDirectory.path]).status == 0)
        let storage = try LocalStorage(configuration: configuration)
        #expect(try await storage.fetch(User.self, id: "usr_big")?.age == 9_007_199_254_740_993)
        #expect(try await storage.count(Product.self) == 10)
        #expect(try await storage.metadata(Product.self, id: "sku_10")?.isExpired == true)
    }

    @Test func importRejectsABadFileBeforeWritingAnything() async throws {
        let fixture = try await Fixture()
        let file = fixture.directory.appendingPathComponent("bad.jsonl")
        let exported = try await fixture.run(["export", "Note"]).stdout
        try Data((exported + "{\"type\":\"Note\",\"id\":\"x\"}\n").utf8).write(to: file)
        let copy = fixture.directory.appendingPathComponent("copy")
        let result = try await fixture.run(["import", file.path, "--store", copy.path])
        #expect(result.status == 1)
        #expect(result.stderr == "localstorage: error: line 4: not a type or record line (no \"createdAt\")\n")
        #expect(try await fixture.run(["list", "Note", "--store", copy.path]).status == 1)  // No type was written.
    }

    // MARK: - Usage

    @Test func usageErrorsExitWithTwoAndHelpWithZero() async throws {
        let fixture = try await Fixture()
        #expect(try await fixture.run([]).status == 2)
        #expect(try await fixture.run(["frobnicate"]).status == 2)
        #expect(try await fixture.run(["list"]).status == 2)
        #expect(try await fixture.run(["list", "Product", "--limit", "ten"]).status == 2)
        #expect(try await fixture.run(["list", "Product", "--bogus"]).status == 2)
        let help = try await fixture.run(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("purge-expired"))
        for command in [
            "stats", "types", "list", "get", "delete", "purge-expired", "clear", "verify", "compact",
            "export", "import",
        ] {
            let result = try await fixture.run([command, "--help"])
            #expect(result.status == 0 && result.stdout.hasPrefix("usage: localstorage \(command)"))
        }
        let unknownType = try await fixture.run(["list", "Nope"])
        #expect(unknownType.status == 1)
        #expect(unknownType.stderr.contains("the store has no type \"Nope\" (it has: Note, Product, User)"))
        let noStore = try await fixture.run(["stats", "--store", fixture.directory.appendingPathComponent("none").path])
        #expect(noStore.status == 1)
        #expect(noStore.stderr.contains("no store at"))
        // A file where the store's directory should be says so; the store's data file names its directory.
        let file = fixture.directory.appendingPathComponent("notes.txt")
        try Data("x".utf8).write(to: file)
        let onAFile = try await fixture.run(["stats", "--store", file.path])
        #expect(onAFile.status == 1)
        #expect(onAFile.stderr.contains("notes.txt is a file, not a store's directory"), "\(onAFile.stderr)")
        let dataFile = try await fixture.run([
            "types", "--store", fixture.store.appendingPathComponent("data.mdb").path,
        ])
        #expect(dataFile.status == 0 && dataFile.stdout.contains("Product"), "\(dataFile.stderr)")
        let fromEnvironment = try await fixture.run(
            ["types"], store: nil,
            environment: ["LOCALSTORAGE_STORE": fixture.store.path])
        #expect(fromEnvironment.stdout.contains("Product"))
    }

    @Test func verifyThroughTheSPIReportsAPayloadThatIsNotJSON() async throws {
        let directory = temporaryDirectory()
        let configuration = diskConfiguration(directory)
        do {
            let storage = try LocalStorage(configuration: configuration)
            try await storage.save(Note(id: "n1", text: "fine"))
            let header = RecordHeader(
                format: .json, version: 1, createdAt: 1, updatedAt: 2, expiresAt: 0,
                signature: IndexDeclaration.none.signature, indexValues: [])
            let schema = try await storage.core.schema(for: Note.self)
            try storage.core.environment.write { txn in
                let (records, updated) = (schema.records, schema.updated)
                try txn.put(records, key: Array("bad".utf8), value: try header.serialized(payload: Array("{no".utf8)))
                if try schema.keepsUpdateOrder(txn) {
                    try txn.put(updated, key: RecordWriter.timeKey(2), value: Array("bad".utf8))
                }
                try txn.put(
                    schema.signatures, key: RecordWriter.signatureKey(header.signature), value: Array("bad".utf8))
            }
        }  // The store closes here: one process may open an environment only once.
        let maintenance = try await StoreMaintenance(directory: configuration.storeDirectory)
        let report = try maintenance.verify()
        #expect(report.records == 2)
        #expect(report.problems.map(\.kind) == [.undecodablePayload])
        #expect(report.problems.first?.description.hasPrefix("Note \"bad\": the json payload cannot be read") == true)
        #expect(throws: MaintenanceError.recordNotFound(type: "Note", id: "zz")) {
            try maintenance.record("Note", id: "zz")
        }
        #expect(try maintenance.list("Note").records.map(\.id) == ["bad", "n1"])
    }

    // MARK: - JSON text

    @Test func prettyPrintingKeepsNumbersExactly() {
        let json = Data(#"{"a":[1,2.50,{}],"b":"x,\"y\"","c":12345678901234567890}"#.utf8)
        #expect(
            JSONText.prettyPrinted(json) == """
                {
                    "a": [
                        1,
                        2.50,
                        {}
                    ],
                    "b": "x,\\"y\\"",
                    "c": 12345678901234567890
                }
                """)
        let bytes = Array(#"{"id":"p","payload": {"x":"}"} ,"z":1}"#.utf8)
        let range = JSONText.rangeOfMember("payload", in: bytes)
        #expect(range.map { String(decoding: bytes[$0], as: UTF8.self) } == #"{"x":"}"}"#)
    }
}

// MARK: - Fixture

/// A store made by the library, open in this process (as an app would have it), and the CLI to run on it.
private struct Fixture {
    let directory: URL
    let storage: LocalStorage

    /// The store directory (holding data.mdb).
    var store: URL { storage.configuration.storeDirectory }

    /// 12 products (2 of them expired), 3 users (one with an age beyond 2^53), 2 notes.
    init() async throws {
        directory = temporaryDirectory()
        storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(contentsOf: (0..<10).map(Product.sample))
        try await storage.save(
            contentsOf: [Product.sample(10), Product.sample(11)],
            expiration: .date(Date().addingTimeInterval(-60)))
        let big = User(
            id: "usr_big", name: "Big", email: "big@example.com", role: .admin, age: 9_007_199_254_740_993,
            lastSeen: Date(timeIntervalSince1970: 1_700_000_000.25))
        try await storage.save(
            contentsOf: [
                User.mock, big,
                User(
                    id: "usr_1", name: "Bo", email: "bo@example.com", role: .viewer,
                    age: 20, lastSeen: Date()),
            ], expiration: .hours(1))
        try await storage.save(contentsOf: [Note(id: "n1", text: "one"), Note(id: "n2", text: "two\nlines")])
    }

    /// The problems `verify --json` reports.
    func maintenanceReport() async throws -> [VerifyProblem] {
        let result = try await run(["verify", "--json"])
        return try JSONDecoder().decode(VerifyReport.self, from: Data(result.stdout.utf8)).problems
    }

    /// Runs `localstorage` with `arguments` and `--store` (unless `store` is nil); waits for it to end.
    func run(_ arguments: [String], store: URL? = nil, environment: [String: String]? = nil) async throws -> CLIResult {
        var arguments = arguments
        if environment == nil, !arguments.contains("--store") {
            arguments += ["--store", (store ?? self.store).path]
        }
        return try await CLIResult.run(arguments, environment: environment)
    }
}

/// One finished run of the CLI.
struct CLIResult {
    let status: Int32
    let stdout: String
    let stderr: String

    /// The built executable: next to the test bundle in the products directory.
    static let executable: URL? = {
        let candidates =
            ([Bundle.main] + Bundle.allBundles).flatMap { bundle in
                [bundle.bundleURL.deletingLastPathComponent(), bundle.bundleURL]
            } + [
                URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug")
            ]
        return candidates.map { $0.appendingPathComponent("localstorage") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// Runs the CLI with `arguments`; with a `launcher` (such as `setpriv` and its options) it runs
    /// `launcher + [executable] + arguments`.
    static func run(
        _ arguments: [String], environment: [String: String]?,
        launcher: [String] = []
    ) async throws -> CLIResult {
        let executable = try #require(executable, "the localstorage executable was not built next to the tests")
        let (path, fullArguments) =
            launcher.first.map { ($0, Array(launcher.dropFirst()) + [executable.path] + arguments) }
            ?? (executable.path, arguments)
        var variables = ProcessInfo.processInfo.environment
        variables["LOCALSTORAGE_STORE"] = nil
        for (name, value) in environment ?? [:] { variables[name] = value }
        // Files rather than pipes: no deadlock however much either stream holds.
        let outputs = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: outputs) }
        let out = outputs.appendingPathComponent("out")
        let err = outputs.appendingPathComponent("err")
        try Data().write(to: out)
        try Data().write(to: err)
        let outHandle = try FileHandle(forWritingTo: out)
        let errHandle = try FileHandle(forWritingTo: err)
        let process = try ChildProcess(
            executable: path, arguments: fullArguments, environment: variables,
            standardOutput: .fileDescriptor(outHandle.fileDescriptor),
            standardError: .fileDescriptor(errHandle.fileDescriptor))
        try outHandle.close()
        try errHandle.close()
        // Waits off the cooperative pool: a test blocked in `waitUntilExit` holds one of its few threads,
        // and two of them stall every other test in the process.
        let termination = try await offThePool { try process.waitUntilExit() }
        return CLIResult(
            status: termination.status,
            stdout: try String(contentsOf: out, encoding: .utf8),
            stderr: try String(contentsOf: err, encoding: .utf8))
    }
}
