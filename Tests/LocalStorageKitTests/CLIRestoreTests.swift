import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// `localstorage` as a new user meets it: restores through a pipe, compacted copies an app opens, ids that
/// look like options, output that cannot be spoofed, and one figure for the map (issue 21).
@Suite struct CLIRestoreTests {
    /// A store made by the library with `count` notes, and its store directory.
    private func makeStore(notes count: Int) async throws -> (storage: LocalStorage, store: URL) {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: (0..<count).map { Note(id: "n\($0)", text: "note \($0)") })
        return (storage, storage.configuration.storeDirectory)
    }

    /// Runs `script` with `sh -c`; inside it `$1` is the `localstorage` executable and `$2`… are `arguments`.
    private func shell(_ script: String, _ arguments: [String]) async throws -> CLIResult {
        try await CLIResult.run(arguments, environment: nil, launcher: ["/bin/sh", "-c", script, "sh"])
    }

    @Test(arguments: ["-", "/dev/stdin"])
    func exportPipedIntoImportCopiesEveryRecord(input: String) async throws {
        let (source, store) = try await makeStore(notes: 40)
        let target = temporaryDirectory()
        var configuration = diskConfiguration(target)
        configuration.expirySweepInterval = nil
        let result = try await shell(
            #""$1" export --store "$2" | "$1" import "$3" --store "$4""#,
            [store.path, input, configuration.storeDirectory.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "Imported 40 records of Note.\n")
        let copy = try LocalStorage(configuration: configuration)
        #expect(try await copy.count(Note.self) == 40)
        for n in [0, 17, 39] {
            #expect(try await copy.fetch(Note.self, id: "n\(n)") == source.fetch(Note.self, id: "n\(n)"))
        }
    }

    /// `import -` reads standard input from where it stands, also when it is a regular file: it reopened
    /// `/dev/stdin` by path, which reads the file from its start (here a line the shell already consumed). So does
    /// `import /dev/stdin`, which API.md names too (review-cli-52, 6: it read the file by name from its start).
    @Test(arguments: ["-", "/dev/stdin"])
    func importFromStandardInputReadsFromWhereItStands(input: String) async throws {
        let (_, store) = try await makeStore(notes: 12)
        let export = try await CLIResult.run(["export", "--store", store.path], environment: nil)
        #expect(export.status == 0, "\(export.stderr)")
        let file = temporaryDirectory().appendingPathComponent("export.jsonl")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(("not an export line\n" + export.stdout).utf8).write(to: file)
        var configuration = diskConfiguration()
        configuration.expirySweepInterval = nil
        let result = try await shell(
            #"{ IFS= read -r skipped; "$1" import "$3" --store "$4"; } < "$2""#,
            [file.path, input, configuration.storeDirectory.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try await LocalStorage(configuration: configuration).count(Note.self) == 12)
    }

    /// Output that cannot be written (a full disk) ends the command with status 1 and says so: it crashed (a
    /// `try!` inside `FileHandle.write`), and `verify` then called the store damaged.
    @Test(arguments: [["list", "Note"], ["verify"], ["stats", "--json"], ["export"]])
    func outputThatCannotBeWrittenIsAnErrorNotACrash(command: [String]) async throws {
        let (_, store) = try await makeStore(notes: 3)
        let result = try await shell(
            #"tool="$1" store="$2"; shift 2; "$tool" "$@" --store "$store" > /dev/full"#, [store.path] + command)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("cannot write the output"), "\(result.stderr)")
        #expect(!result.stderr.contains("damaged"), "\(result.stderr)")
    }

    /// `compact --output DIR --key-file K` of a store that is not encrypted: the key is not used on the copy either
    /// (the copy's check opened it with the key, refused it, and left the copy behind with status 1; a retry was
    /// refused with "already exists"; review-cli-52, 4).
    @Test func aCompactOfAPlainStoreWithAKeyFileWritesAPlainCopy() async throws {
        let (_, store) = try await makeStore(notes: 20)
        let keyFile = try EncryptedSalvageTests.keyFile()
        let output = temporaryDirectory()
        let result = try await CLIResult.run(
            ["compact", "--output", output.path, "--key-file", keyFile.path, "--store", store.path], environment: nil)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("the key file was not used"), "\(result.stderr)")
        var configuration = diskConfiguration(output)
        configuration.expirySweepInterval = nil
        #expect(try await LocalStorage(configuration: configuration).fetch(Note.self, id: "n7")?.text == "note 7")
    }

    /// `export --output LINK`, a symbolic link to a regular file: the file it leads to gets the export and the
    /// store's private mode, and the link stays (through the link, the plaintext kept the target's 0o644;
    /// review-cli-52, 7).
    @Test func anExportThroughALinkGivesTheFileTheStoresMode() async throws {
        let (_, store) = try await makeStore(notes: 5)
        let folder = temporaryDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let target = folder.appendingPathComponent("target.jsonl")
        let link = folder.appendingPathComponent("link.jsonl")
        try Data("old\n".utf8).write(to: target)
        #expect(chmod(target.path, 0o644) == 0)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let result = try await CLIResult.run(
            ["export", "--output", link.path, "--store", store.path], environment: nil)
        #expect(result.status == 0, "\(result.stderr)")
        var info = stat()
        #expect(stat(target.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
        #expect(try String(contentsOf: target, encoding: .utf8).contains("note 3"))
    }

    /// `-` is standard input for `import` and standard output for `export --output`, also beside a file named `-`
    /// (the stale file was imported instead of the pipe, and `export --output -` wrote a file named `-`); with
    /// `--output /dev/stdout` the summary goes to standard error, not into the export (review-cli-52).
    @Test func aDashIsTheStandardStreamAndTheSummaryStaysOutOfTheExport() async throws {
        let (_, store) = try await makeStore(notes: 9)
        let folder = temporaryDirectory()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("stale\n".utf8).write(to: folder.appendingPathComponent("-"))
        var configuration = diskConfiguration()
        configuration.expirySweepInterval = nil
        let piped = try await shell(
            #"cd "$2" && "$1" export --store "$3" --output - | "$1" import - --store "$4""#,
            [folder.path, store.path, configuration.storeDirectory.path])
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(try String(contentsOf: folder.appendingPathComponent("-"), encoding: .utf8) == "stale\n")
        #expect(try await LocalStorage(configuration: configuration).count(Note.self) == 9)
        let streamed = try await CLIResult.run(
            ["export", "--store", store.path, "--output", "/dev/stdout"], environment: nil)
        #expect(streamed.status == 0, "\(streamed.stderr)")
        #expect(streamed.stdout.split(separator: "\n").count == 10, "\(streamed.stdout)")
        #expect(!streamed.stdout.contains("Exported"))
        #expect(streamed.stderr.contains("Exported 9 records"), "\(streamed.stderr)")
    }

    /// A `compact --output DIR` that fails part way (files limited to 48 KiB here, as a full disk would) leaves
    /// no store in DIR, and a retry writes one: a truncated data.mdb was left, which refused the retry ("already
    /// exists") and opened as a damaged store.
    @Test func aCompactThatFailsPartWayLeavesNoStore() async throws {
        let (_, store) = try await makeStore(notes: 2_000)
        let output = temporaryDirectory()
        let failed = try await shell(
            #"trap '' XFSZ; ulimit -f 96; "$1" compact --output "$3" --store "$2""#, [store.path, output.path])
        #expect(failed.status == 1, "\(failed.stdout)\(failed.stderr)")
        let copy = output.appendingPathComponent("LocalStorage")
        #expect(!FileManager.default.fileExists(atPath: copy.appendingPathComponent("data.mdb").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: copy.path).isEmpty)
        let retried = try await CLIResult.run(
            ["compact", "--output", output.path, "--store", store.path], environment: nil)
        #expect(retried.status == 0, "\(retried.stderr)")
        var configuration = diskConfiguration(output)
        configuration.expirySweepInterval = nil
        #expect(try await LocalStorage(configuration: configuration).count(Note.self) == 2_000)
    }

    /// A record with bytes, a date, a URL, a whole number in a `Double` and slashes in strings.
    private struct Attachment: LocalStorable, Equatable {
        let id: String
        var bytes: Data
        var empty: Data?
        var date: Date
        var link: URL
        var size: Double
        var path: String
    }

    /// An export of an imported export is the same file, byte for byte: a `Data` member (bytes, written as
    /// Base64) comes back as a string, which the payload's JSON wrote with its slashes escaped (`\/`).
    @Test func anExportOfAnImportedExportIsTheSameFile() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        var attachments: [Attachment] = []
        for n in 0..<20 {
            let bytes: [UInt8] = (0..<(n * 7)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ n) }
            let link = try #require(URL(string: "https://example.com/a/\(n)?q=1"))
            attachments.append(
                Attachment(
                    id: "a/\(n)", bytes: Data(bytes), empty: n % 2 == 0 ? Data() : nil,
                    date: Date(timeIntervalSince1970: 1_000.5 * Double(n)), link: link, size: Double(n * 3),
                    path: "/tmp/\(n)/x"))
        }
        try await storage.save(contentsOf: attachments)
        let first = try await CLIResult.run(
            ["export", "--store", storage.configuration.storeDirectory.path], environment: nil)
        #expect(first.status == 0, "\(first.stderr)")
        let file = temporaryDirectory().appendingPathComponent("first.jsonl")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(first.stdout.utf8).write(to: file)
        let copy = diskConfiguration()
        let imported = try await CLIResult.run(
            ["import", file.path, "--store", copy.storeDirectory.path], environment: nil)
        #expect(imported.status == 0, "\(imported.stderr)")
        let second = try await CLIResult.run(["export", "--store", copy.storeDirectory.path], environment: nil)
        #expect(second.stdout == first.stdout)
        let restored = try LocalStorage(configuration: copy)
        for attachment in attachments {
            #expect(try await restored.fetch(Attachment.self, id: attachment.id) == attachment)
        }
    }

    @Test func importOfAnEmptyPipeImportsNothingAndSaysSo() async throws {
        let target = temporaryDirectory().appendingPathComponent("store")
        let result = try await shell(#"printf '' | "$1" import - --store "$2""#, [target.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "Imported 0 records.\n")
    }

    @Test func compactWritesAStoreTheLibraryOpensAsItIs() async throws {
        let (storage, store) = try await makeStore(notes: 30)
        for n in 0..<10 { try await storage.delete(Note.self, id: "n\(n)") }
        let output = temporaryDirectory().appendingPathComponent("compacted")
        // An empty --output is a usage error (it wrote ./LocalStorage before).
        let empty = try await CLIResult.run(["compact", "--output", "", "--store", store.path], environment: nil)
        #expect(empty.status == 2 && empty.stderr.contains("--output"), "\(empty.stderr)")
        let compact = try await CLIResult.run(
            ["compact", "--output", output.path, "--store", store.path], environment: nil)
        #expect(compact.status == 0, "\(compact.stderr)")
        // The output is a databaseDirectory: the app opens it with the path it was given.
        var configuration = diskConfiguration(output)
        configuration.expirySweepInterval = nil
        #expect(
            FileManager.default.fileExists(atPath: configuration.storeDirectory.appendingPathComponent("data.mdb").path)
        )
        let copy = try LocalStorage(configuration: configuration)
        #expect(try await copy.count(Note.self) == 20)
        #expect(try await copy.fetch(Note.self, id: "n25") == Note(id: "n25", text: "note 25"))
        let listed = try await CLIResult.run(["list", "Note", "--store", output.path], environment: nil)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.split(separator: "\n").count == 20)
    }

    /// `--output` naming a directory that holds a data file itself (another store's folder): the copy went to
    /// its `LocalStorage` folder, where `--store` on that directory never finds it (it names the store whose data
    /// file the directory holds). It is refused, and nothing is written there.
    @Test func compactRefusesAnOutputThatHoldsAStore() async throws {
        let (_, store) = try await makeStore(notes: 5)
        let (_, other) = try await makeStore(notes: 1)
        let otherFiles = other  // The store folder, holding data.mdb.
        let before = try Data(contentsOf: otherFiles.appendingPathComponent("data.mdb"))
        let compact = try await CLIResult.run(
            ["compact", "--output", otherFiles.path, "--store", store.path], environment: nil)
        #expect(compact.status == 1, "\(compact.stdout)\(compact.stderr)")
        #expect(compact.stderr.contains("already exists"), "\(compact.stderr)")
        #expect(!FileManager.default.fileExists(atPath: otherFiles.appendingPathComponent("LocalStorage").path))
        #expect(try Data(contentsOf: otherFiles.appendingPathComponent("data.mdb")) == before)
    }

    /// A data file of no bytes holds no store yet: a read-only `stats` made a store of it (LMDB creates one in an
    /// empty file), and `compact` did too before it found no `meta`. Only an import creates a store there.
    @Test func anEmptyDataFileIsNoStoreExceptToAnImport() async throws {
        let files = temporaryDirectory().appendingPathComponent("LocalStorage")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let data = files.appendingPathComponent("data.mdb")
        #expect(FileManager.default.createFile(atPath: data.path, contents: Data()))
        for command in [["stats"], ["types"], ["verify"], ["export"], ["list", "Note"], ["compact"]] {
            let result = try await CLIResult.run(command + ["--store", files.path], environment: nil)
            #expect(result.status == 1, "\(command): \(result.stdout)")
            #expect(result.stderr.contains("no store at"), "\(command): \(result.stderr)")
            #expect(try Data(contentsOf: data).isEmpty, "\(command)")
        }
        #expect(!FileManager.default.fileExists(atPath: files.appendingPathComponent("lock.mdb").path))
        let (_, source) = try await makeStore(notes: 3)
        let export = try await CLIResult.run(["export", "--store", source.path], environment: nil)
        let file = temporaryDirectory().appendingPathComponent("notes.jsonl")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(export.stdout.utf8).write(to: file)
        let imported = try await CLIResult.run(["import", file.path, "--store", files.path], environment: nil)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("Imported 3 records"), "\(imported.stdout)")
    }

    @Test func idsThatBeginWithADashFollowTheEndOfOptions() async throws {
        let (storage, store) = try await makeStore(notes: 1)
        try await storage.save(Note(id: "-dash", text: "dashing"))
        let get = try await CLIResult.run(["--store", store.path, "get", "Note", "--", "-dash"], environment: nil)
        #expect(get.status == 0, "\(get.stderr)")
        #expect(get.stdout.contains("dashing"))
        let unmarked = try await CLIResult.run(["--store", store.path, "get", "Note", "-dash"], environment: nil)
        #expect(unmarked.status == 2)
        #expect(unmarked.stderr.contains("--"))  // The usage error says how to name it.
        let delete = try await CLIResult.run(
            ["delete", "--store", store.path, "Note", "--", "-dash"], environment: nil)
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(try await storage.fetch(Note.self, id: "-dash") == nil)
    }

    @Test func outputEscapesControlBidirectionalAndInvisibleCharacters() async throws {
        let (storage, store) = try await makeStore(notes: 1)
        let spoofs = ["evil\u{202E}txt.exe", "bom\u{FEFF}", "iso\u{2066}late\u{2069}", "bell\u{07}", "zw\u{200B}j"]
        for id in spoofs { try await storage.save(Note(id: id, text: "x\u{202E}y\u{FEFF}z")) }
        let forbidden: Set<Unicode.Scalar> = ["\u{202E}", "\u{FEFF}", "\u{2066}", "\u{2069}", "\u{07}", "\u{200B}"]
        func isClean(_ text: String) -> Bool { !text.unicodeScalars.contains { forbidden.contains($0) } }

        let list = try await CLIResult.run(["list", "Note", "--store", store.path], environment: nil)
        #expect(list.status == 0)
        #expect(isClean(list.stdout), "\(list.stdout.debugDescription)")
        #expect(list.stdout.contains(#""evil\u202etxt.exe""#))
        let json = try await CLIResult.run(["list", "Note", "--json", "--store", store.path], environment: nil)
        #expect(isClean(json.stdout))
        let listing = try JSONDecoder().decode(RecordListing.self, from: Data(json.stdout.utf8))
        #expect(Set(listing.records.map(\.id)) == Set(spoofs + ["n0"]))  // JSON escapes read back exactly.
        let get = try await CLIResult.run(
            ["get", "Note", "--escaped", #"evil\u202etxt.exe"#, "--store", store.path], environment: nil)
        #expect(get.status == 0, "\(get.stderr)")
        #expect(isClean(get.stdout))
        #expect(get.stdout.contains(#"x\u202ey\ufeffz"#))
        let missing = try await CLIResult.run(
            ["get", "Note", "--escaped", #"no\u202eone"#, "--store", store.path], environment: nil)
        #expect(missing.status == 1)
        #expect(isClean(missing.stderr))
        // Exports too (to standard output and to a file), and an import reads the escapes back exactly.
        let exported = try await CLIResult.run(["export", "Note", "--store", store.path], environment: nil)
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(isClean(exported.stdout), "\(exported.stdout.debugDescription)")
        #expect(exported.stdout.contains(#""evil\u202etxt.exe""#))
        let file = temporaryDirectory().appendingPathComponent("notes.jsonl")
        let toFile = try await CLIResult.run(
            ["export", "Note", "--output", file.path, "--store", store.path], environment: nil)
        #expect(toFile.status == 0, "\(toFile.stderr)")
        #expect(isClean(try String(contentsOf: file, encoding: .utf8)))
        let copy = temporaryDirectory()
        let imported = try await CLIResult.run(["import", file.path, "--store", copy.path], environment: nil)
        #expect(imported.status == 0, "\(imported.stderr)")
        let reExported = try await CLIResult.run(["export", "Note", "--store", copy.path], environment: nil)
        #expect(reExported.stdout == exported.stdout)
    }

    @Test func statsShowsTheMapFigureStatisticsReports() async throws {
        let (storage, store) = try await makeStore(notes: 0)
        let text = String(repeating: "y", count: 3_000)
        try await storage.save(contentsOf: (0..<400).map { Note(id: "m\($0)", text: text) })
        for n in 0..<350 { try await storage.delete(Note.self, id: "m\(n)") }
        let expected = try await storage.statistics()
        #expect(expected.mapFreeBytes > 0)
        let stats = try await CLIResult.run(["stats", "--store", store.path], environment: nil)
        #expect(stats.status == 0, "\(stats.stderr)")
        let line = try #require(stats.stdout.split(separator: "\n").first { $0.hasPrefix("Map ") })
        #expect(line.contains("\(bytes(expected.mapUsedBytes)) used, \(bytes(expected.mapFreeBytes)) free"), "\(line)")
    }

    /// The CLI's byte format: `512 B`, `12.3 KiB`.
    private func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f", value) + " " + units[unit]
    }
}
