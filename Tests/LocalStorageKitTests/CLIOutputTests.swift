import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the CLI writes and leaves behind on the paths a new-user trial found wrong: a salvage's modes and
/// its one JSON document, exports that fail or hold plaintext, payloads that are not records, names with
/// line breaks, and an empty `--store`.
@Suite struct CLIOutputTests {
    /// A damaged group store (0660) that `verify --repair --json` salvages keeps its modes, and the command
    /// prints one JSON document (it printed the salvage's report and the check's one after the other).
    @Test func aSalvageKeepsTheStoreModeAndPrintsOneJSONDocument() async throws {
        var configuration = diskConfiguration()
        configuration.filePermissions = 0o660
        try await withStore(configuration) { storage async throws in
            try await storage.save(contentsOf: (0..<300).map(Product.sample))
        }
        let store = configuration.storeDirectory
        let url = store.appendingPathComponent("data.mdb")
        // The last page's flags made impossible, in place (a rewrite of the file would change its mode).
        let size = try #require(FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber).intValue
        let handle = try FileHandle(forUpdating: url)
        try handle.seek(toOffset: UInt64(size - 4_096 + 10))
        handle.write(Data([0xFF, 0xFF]))
        try handle.close()
        #expect(!(try StoreMaintenance.pageDamage(directory: store)).isEmpty)
        // Run as root on a store another user owns, the salvage gives the new file that owner (it was root's, and
        // the app that owns the store could not open it).
        let owner: (uid_t, gid_t)? = getuid() == 0 ? (65_534, 65_534) : nil
        if let owner {
            for name in ["data.mdb", "lock.mdb"] {
                #expect(chown(store.appendingPathComponent(name).path, owner.0, owner.1) == 0)
            }
        }

        let repair = try await CLIResult.run(["verify", "--repair", "--json", "--store", store.path], environment: nil)
        let document = try JSONSerialization.jsonObject(with: Data(repair.stdout.utf8)) as? [String: Any]
        #expect(document?["salvage"] != nil, "\(repair.stdout)")
        #expect(document?["verify"] != nil)
        #expect(FileModeTests.modes(of: store) == [0o770, 0o660, 0o660])
        if let owner {
            var info = stat()
            #expect(stat(url.path, &info) == 0 && info.st_uid == owner.0 && info.st_gid == owner.1)
        }
    }

    /// `export --output FILE` that fails (an unknown type) leaves an existing FILE as it was and creates none;
    /// one that succeeds writes FILE with the store's mode (it holds the records in plaintext).
    @Test func anExportFileIsWholeOrUntouchedAndPrivate() async throws {
        let configuration = diskConfiguration()
        try await withStore(configuration) { storage async throws in
            try await storage.save(contentsOf: (0..<5).map(Product.sample))
        }
        let store = configuration.storeDirectory.path
        let folder = temporaryDirectory()
        let kept = folder.appendingPathComponent("kept.jsonl")
        try Data("earlier export\n".utf8).write(to: kept)
        let failed = try await CLIResult.run(
            ["export", "Nope", "--output", kept.path, "--store", store], environment: nil)
        #expect(failed.status == 1)
        #expect(try String(contentsOf: kept, encoding: .utf8) == "earlier export\n")
        let missing = folder.appendingPathComponent("missing.jsonl")
        _ = try await CLIResult.run(["export", "Nope", "--output", missing.path, "--store", store], environment: nil)
        #expect(!FileManager.default.fileExists(atPath: missing.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["kept.jsonl"])

        // (Whatever this process's umask: the suites run in parallel, so the test leaves it alone.)
        let written = try await CLIResult.run(["export", "--output", kept.path, "--store", store], environment: nil)
        #expect(written.status == 0, "\(written.stderr)")
        #expect(try String(contentsOf: kept, encoding: .utf8).contains("sku_4"))
        #expect(FileModeTests.mode(kept) == 0o600)

        // A symbolic link is written through, not replaced by a file.
        let real = folder.appendingPathComponent("real.jsonl")
        let link = folder.appendingPathComponent("link.jsonl")
        try Data().write(to: real)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let linked = try await CLIResult.run(["export", "--output", link.path, "--store", store], environment: nil)
        #expect(linked.status == 0, "\(linked.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == real.path)
        #expect(try String(contentsOf: real, encoding: .utf8).contains("sku_4"))
    }

    /// A FILE whose folder takes no file beside it (here an immutable folder: the tests run as root, whom
    /// permissions do not stop) is written in place, and the summary still goes to standard output, as for any
    /// file (it went to standard error, as for `--output /dev/stdout`; review-diff-53).
    @Test(.enabled(if: CLIOutputTests.immutableFoldersWork()))
    func anExportWrittenInPlaceReportsOnStandardOutput() async throws {
        let configuration = diskConfiguration()
        try await withStore(configuration) { storage async throws in
            try await storage.save(contentsOf: (0..<3).map(Product.sample))
        }
        let folder = temporaryDirectory()
        let file = folder.appendingPathComponent("in-place.jsonl")
        try Data("earlier\n".utf8).write(to: file)
        #expect(Self.chattr("+i", folder) == 0)
        defer { _ = Self.chattr("-i", folder) }
        let result = try await CLIResult.run(
            ["export", "--output", file.path, "--store", configuration.storeDirectory.path], environment: nil)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "Exported 3 records of 1 types.\n", "\(result.stdout)")
        #expect(!result.stderr.contains("Exported"), "\(result.stderr)")
        #expect(try String(contentsOf: file, encoding: .utf8).contains("sku_2"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["in-place.jsonl"])
    }

    /// Runs `chattr FLAG folder`; its status (-1 when it cannot run).
    static func chattr(_ flag: String, _ folder: URL) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [flag, folder.path]
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Whether this file system takes the immutable flag on a folder and then refuses a new file in it.
    static func immutableFoldersWork() -> Bool {
        let folder = temporaryDirectory()
        guard chattr("+i", folder) == 0 else { return false }
        defer { _ = chattr("-i", folder) }
        return !FileManager.default.createFile(atPath: folder.appendingPathComponent("probe").path, contents: nil)
    }

    /// A record line whose payload is not a JSON object (`null`, an array, a number) is refused: it would
    /// import and then decode as nothing.
    @Test(arguments: ["null", "[1,2]", "7"])
    func aPayloadThatIsNotAnObjectIsRefused(payload: String) async throws {
        let file = temporaryDirectory().appendingPathComponent("odd.jsonl")
        let lines = [
            #"{"indexes":[],"signature":1,"type":"T","version":1}"#,
            #"{"createdAt":1,"format":"binary","id":"a","indexes":{},"payload":"# + payload
                + #","signature":1,"type":"T","updatedAt":1,"version":1}"#,
        ]
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        let target = temporaryDirectory()
        let result = try await CLIResult.run(["import", file.path, "--store", target.path], environment: nil)
        #expect(result.status == 1)
        #expect(result.stderr.contains("not a JSON object"), "\(result.stderr)")
        // A model with its own `encode(to:)` may store such a payload: without the payload checks it imports.
        let unchecked = try await CLIResult.run(
            ["import", file.path, "--no-payload-check", "--store", target.path], environment: nil)
        #expect(unchecked.status == 0, "\(unchecked.stderr)")
    }

    /// A type or index name with a line break is printed escaped by `import`, `purge-expired`, `stats`, `types`
    /// and in errors (index names were printed raw by `types` and `stats`).
    @Test func aNameWithALineBreakStaysOnItsLine() async throws {
        let configuration = diskConfiguration()
        try await withStore(configuration) { storage async throws in
            try await storage.save(Twisted(id: "a"), expiration: .date(Date(timeIntervalSinceNow: -5)))
            try await storage.save(Twisted(id: "b"))
        }
        let store = configuration.storeDirectory.path
        let export = temporaryDirectory().appendingPathComponent("all.jsonl")
        #expect(
            try await CLIResult.run(["export", "--output", export.path, "--store", store], environment: nil).status == 0
        )
        let outputs = [
            try await CLIResult.run(["purge-expired", "--store", store], environment: nil),
            try await CLIResult.run(["stats", "--store", store], environment: nil),
            try await CLIResult.run(["types", "--store", store], environment: nil),
            try await CLIResult.run(["get", "\"two\\nlines\"", "nope", "--store", store], environment: nil),
            try await CLIResult.run(["import", export.path, "--store", temporaryDirectory().path], environment: nil),
        ]
        for output in outputs {
            let text = output.stdout + output.stderr
            #expect(!text.contains("two\nlines") && !text.contains("in\ndex"), "\(text)")
            #expect(text.contains("two\\nlines") || text.contains("two\\u000alines"), "\(text)")
        }
    }

    /// An option left without its value before another option says so (it took the option as its value, and
    /// the store's path became an unexpected argument).
    @Test func anOptionFollowedByAnotherOptionNeedsItsValue() async throws {
        let result = try await CLIResult.run(["list", "Product", "--limit", "--store", "/tmp"], environment: nil)
        #expect(result.status == 2)
        #expect(result.stderr.contains("--limit needs a value (it is followed by --store)"), "\(result.stderr)")
    }

    /// `get` of a record that expired but is not purged yet prints it, and says on standard error that the app
    /// no longer reads it; standard output stays the payload alone.
    @Test func getSaysARecordHasExpired() async throws {
        let configuration = diskConfiguration()
        try await withStore(configuration) { storage async throws in
            try await storage.save(Note(id: "old", text: "gone"), expiration: .date(Date(timeIntervalSinceNow: -5)))
            try await storage.save(Note(id: "new", text: "here"))
        }
        let store = configuration.storeDirectory.path
        let old = try await CLIResult.run(["get", "Note", "old", "--store", store], environment: nil)
        #expect(old.status == 0)
        #expect(old.stdout.contains("gone"))
        #expect(old.stderr.contains("has expired"), "\(old.stderr)")
        let new = try await CLIResult.run(["get", "Note", "new", "--store", store], environment: nil)
        #expect(new.stderr.isEmpty, "\(new.stderr)")
    }

    /// `get` of a record whose header is damaged names the record in its error.
    @Test func aDamagedRecordIsNamedInGetsError() async throws {
        let configuration = try await Self.storeWithDamagedNote(id: "bad")
        let result = try await CLIResult.run(
            ["get", "Note", "bad", "--store", configuration.storeDirectory.path], environment: nil)
        #expect(result.status == 1)
        #expect(result.stderr.contains("Note \"bad\""), "\(result.stderr)")
    }

    /// A damaged record whose id holds a line break is named on one line by `verify` and by `export`'s
    /// "skipped" message (both printed the line break raw, splitting the problem over two lines).
    @Test func aDamagedRecordWithALineBreakInItsIDIsNamedOnOneLine() async throws {
        let configuration = try await Self.storeWithDamagedNote(id: "line\nbreak")
        let store = configuration.storeDirectory.path
        let export = temporaryDirectory().appendingPathComponent("notes.jsonl")
        let outputs = [
            try await CLIResult.run(["verify", "--store", store], environment: nil),
            try await CLIResult.run(["export", "Note", "--output", export.path, "--store", store], environment: nil),
        ]
        for output in outputs {
            let text = output.stdout + output.stderr
            #expect(text.contains("line\\u000abreak"), "\(text)")
            #expect(!text.contains("line\nbreak"), "\(text)")
        }
        // `list` names ids as `get` and `delete` take them (`--escaped`), on one line.
        let list = try await CLIResult.run(["list", "Note", "--store", store], environment: nil)
        #expect(list.stdout.split(separator: "\n").count == 1, "\(list.stdout)")
        #expect(list.stdout.contains(#""line\nbreak"  DAMAGED"#), "\(list.stdout)")
    }

    /// An id that begins or ends with white space is listed quoted: the column's padding hid the space, so
    /// `" lead"`, `"trail "` and `"mid dle"` looked like `lead`, `trail` and an id with a space (trial98 D3).
    @Test func anIdPaddedWithSpaceIsListedQuoted() async throws {
        let store = try await IntegrityStore { storage in
            for id in [" lead", "trail ", "mid dle"] { try await storage.save(Note(id: id, text: "t")) }
        }
        let list = try await store.run(["list", "Note"])
        #expect(list.status == 0, "\(list.stderr)")
        let lines = list.stdout.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix(#"" lead"  "#) }, "\(list.stdout)")
        #expect(lines.contains { $0.hasPrefix(#""trail "  "#) }, "\(list.stdout)")
        #expect(lines.contains { $0.hasPrefix("mid dle  ") }, "\(list.stdout)")
        let get = try await store.run(["get", "Note", " lead"])
        #expect(get.status == 0 && get.stdout.contains("\"text\""), "\(get.stdout)\(get.stderr)")
    }

    /// `list` prints one line per record: a line break in an indexed value split a record over two lines.
    @Test func aLineBreakInAnIndexedValueIsListedOnOneLine() async throws {
        let store = try await IntegrityStore { storage in
            var product = Product.sample(1)
            product.category = "line\nbreak"
            try await storage.save(product)
        }
        let list = try await store.run(["list", "Product"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.split(separator: "\n").count == 1, "\(list.stdout)")
        #expect(list.stdout.contains("line\\u000abreak"), "\(list.stdout)")
    }

    /// `list` takes an index whose name holds a control character (or `=`) as a quoted JSON string, as it takes
    /// such a type name: a command line cannot carry the byte 0x00, and `--where` split the name at its `=`.
    @Test func anIndexWithAnOddNameIsNamedAsAQuotedJSONString() async throws {
        let store = try await IntegrityStore { storage in
            try await storage.save(
                contentsOf: (0..<4).map { OddIndexRecord(id: "o\($0)", level: $0, label: $0 < 2 ? "low" : "high") })
        }
        let equal = try await store.run(["list", "OddIndexRecord", "--where", #""lev\u0000el"=2"#])
        #expect(equal.status == 0, "\(equal.stderr)")
        #expect(equal.stdout.split(separator: "\n").map { $0.prefix(2) } == ["o2"], "\(equal.stdout)")
        let ordered = try await store.run(["list", "OddIndexRecord", "--order", #"-"lev\u0000el""#])
        #expect(
            ordered.stdout.split(separator: "\n").map { $0.prefix(2) } == ["o3", "o2", "o1", "o0"], "\(ordered.stdout)")
        let withEquals = try await store.run(["list", "OddIndexRecord", "--where", #""a=b"=high"#])
        #expect(withEquals.stdout.split(separator: "\n").map { $0.prefix(2) } == ["o2", "o3"], "\(withEquals.stdout)")
    }

    /// A store holding one `Note`, `id`, whose record bytes are not a record (its header cannot be read).
    static func storeWithDamagedNote(id: String) async throws -> LocalStorageConfiguration {
        let configuration = diskConfiguration()
        try await withStore(configuration) { storage async throws in
            try await storage.save(Note(id: id, text: ""))
            let schema = try await storage.core.schema(for: Note.self)
            try await storage.core.writer.perform { context in
                try context.txn.put(schema.records, key: Array(id.utf8), value: [0xDE, 0xAD, 0xBE, 0xEF])
            }
        }
        return configuration
    }

    /// `--store ""` (or `--store=`) is a usage error, not the current directory.
    @Test func anEmptyStoreIsAUsageError() async throws {
        for arguments in [["stats", "--store", ""], ["stats", "--store="]] {
            let result = try await CLIResult.run(arguments, environment: nil)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("--store needs a directory"))
        }
    }
}

/// A type whose storage name holds a line break.
private struct Twisted: LocalStorageIndexed {
    static var storageName: String { "two\nlines" }
    static var storageIndexes: [StorageIndex<Twisted>] { [.string("in\ndex") { $0.id }] }
    let id: String
}

/// A record whose indexes have names a command line cannot give as they are.
struct OddIndexRecord: LocalStorageIndexed, Equatable {
    let id: String
    var level: Int
    var label: String
    static var storageIndexes: [StorageIndex<Self>] {
        [.number("lev\u{0}el") { $0.level }, .string("a=b") { $0.label }]
    }
}
