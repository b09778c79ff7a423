import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// The CLI on an encrypted store: `--key-file`, plaintext exports, sealed imports, `rekey` after a kill.
@Suite struct EncryptionCLITests {
    /// Writes `key` to a fresh key file (as hex digits when `hex`).
    static func keyFile(_ key: Data, hex: Bool = false) throws -> URL {
        let url = temporaryDirectory().appendingPathComponent("key")
        let contents = hex ? Data((key.map { String(format: "%02x", $0) }.joined() + "\n").utf8) : key
        try contents.write(to: url)
        return url
    }

    /// An import during a rotation moves the key check value to the new key only once it has committed: a failed
    /// import had moved it already, and apps with the old key alone could no longer open the store.
    @Test func aFailedImportLeavesTheKeyCheckWhereItWas() async throws {
        let directory = temporaryDirectory()
        try await withStore(EncryptionTests.configuration(directory)) { storage async throws in
            try await storage.save(Note(id: "kept", text: "under the old key"))
        }
        let store = EncryptionTests.configuration(directory).storeDirectory.path
        let keys = [
            "--key-file", try Self.keyFile(EncryptionTests.otherKey).path,
            "--previous-key-file", try Self.keyFile(EncryptionTests.key).path,
        ]
        let input = temporaryDirectory().appendingPathComponent("notes.jsonl")
        try FileManager.default.createDirectory(
            at: input.deletingLastPathComponent(), withIntermediateDirectories: true)
        let export = try await CLIResult.run(
            ["export", "--store", store, "--key-file", try Self.keyFile(EncryptionTests.key).path], environment: nil)
        #expect(export.status == 0, "\(export.stderr)")
        try Data((export.stdout + "not a line of an export\n").utf8).write(to: input)
        let failed = try await CLIResult.run(["import", input.path, "--store", store] + keys, environment: nil)
        #expect(failed.status == 1, "\(failed.stdout)\(failed.stderr)")
        try await withStore(EncryptionTests.configuration(directory)) { storage async throws in
            #expect(try await storage.fetch(Note.self, id: "kept")?.text == "under the old key")
        }
        try Data(export.stdout.utf8).write(to: input)
        let imported = try await CLIResult.run(["import", input.path, "--store", store] + keys, environment: nil)
        #expect(imported.status == 0, "\(imported.stderr)")
        // Committed: the check value is the new key's now.
        #expect(EncryptionTests.openFailure(EncryptionTests.configuration(directory)) != nil)
        try await withStore(EncryptionTests.configuration(directory, key: EncryptionTests.otherKey)) {
            storage async throws in
            #expect(try await storage.fetch(Note.self, id: "kept")?.text == "under the old key")
        }
    }

    @Test func commandsNeedTheKeyAndImportsSeal() async throws {
        let directory = temporaryDirectory()
        let configuration = EncryptionTests.configuration(directory)
        let secret = "cli-secret-\(UUID().uuidString)"
        try await withStore(configuration) { storage async throws in
            try await storage.save(contentsOf: (0..<5).map { Note(id: "n\($0)", text: "\(secret) \($0)") })
        }
        let store = configuration.storeDirectory.path
        let key = try Self.keyFile(EncryptionTests.key)
        let hexKey = try Self.keyFile(EncryptionTests.key, hex: true)

        let locked = try await CLIResult.run(["get", "Note", "n1", "--store", store], environment: nil)
        #expect(locked.status == 1)
        #expect(locked.stderr.contains("encrypted"))
        let wrong = try await CLIResult.run(
            ["get", "Note", "n1", "--store", store, "--key-file", try Self.keyFile(EncryptionTests.otherKey).path],
            environment: nil)
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("not this store's key"))
        let got = try await CLIResult.run(
            ["--key-file", hexKey.path, "get", "Note", "n1", "--store", store], environment: nil)
        #expect(got.status == 0, "\(got.stderr)")
        #expect(got.stdout.contains("\(secret) 1"))
        let verify = try await CLIResult.run(["verify", "--store", store, "--key-file", key.path], environment: nil)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")

        let export = directory.appendingPathComponent("all.jsonl")
        let exported = try await CLIResult.run(
            ["export", "--output", export.path, "--store", store, "--key-file", key.path], environment: nil)
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(try String(contentsOf: export, encoding: .utf8).contains("\(secret) 3"))  // Plaintext, as documented.

        let copy = directory.appendingPathComponent("copy")
        let imported = try await CLIResult.run(
            ["import", export.path, "--store", copy.path, "--key-file", key.path], environment: nil)
        #expect(imported.status == 0, "\(imported.stderr)")
        // The new store is where an app with `databaseDirectory = copy` looks.
        let file = try Data(contentsOf: copy.appendingPathComponent("LocalStorage/data.mdb"))
        #expect(file.range(of: Data(secret.utf8)) == nil)
        let readBack = try await CLIResult.run(
            ["get", "Note", "n3", "--store", copy.path, "--key-file", key.path], environment: nil)
        #expect(readBack.stdout.contains("\(secret) 3"))
    }

    /// During a rotation the app opened with the new key and the old one as previous: the CLI reads every
    /// record given both keys, and with the new key alone `verify` reports the records still sealed with the
    /// old one as such, and `--repair` keeps them (it removed them as damaged before).
    @Test func midRotationTheCLIReadsWithThePreviousKeyAndRepairKeepsWhatItCannotOpen() async throws {
        let directory = temporaryDirectory()
        try await withStore(EncryptionTests.configuration(directory)) { storage async throws in
            try await storage.save(contentsOf: (0..<4).map { Note(id: "n\($0)", text: "rotating \($0)") })
        }
        let rotated = EncryptionTests.configuration(
            directory, key: EncryptionTests.otherKey, previous: [EncryptionTests.key])
        try await withStore(rotated) { storage async throws in
            #expect(try await storage.fetch(Note.self, id: "n0")?.text == "rotating 0")  // resealed with the new key
        }
        let store = rotated.storeDirectory.path
        let new = try Self.keyFile(EncryptionTests.otherKey).path
        let old = try Self.keyFile(EncryptionTests.key).path
        let both = ["--store", store, "--key-file", new, "--previous-key-file", old]
        let verify = try await CLIResult.run(["verify"] + both, environment: nil)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        let got = try await CLIResult.run(["get", "Note", "n2"] + both, environment: nil)
        #expect(got.status == 0 && got.stdout.contains("rotating 2"), "\(got.stderr)")
        let export = try await CLIResult.run(["export"] + both, environment: nil)
        #expect(export.status == 0, "\(export.stderr)")
        #expect((0..<4).allSatisfy { export.stdout.contains("rotating \($0)") }, "\(export.stdout)")

        let newOnly = ["--store", store, "--key-file", new, "--json"]
        let partial = try await CLIResult.run(["verify"] + newOnly, environment: nil)
        #expect(partial.status == 1)
        #expect(partial.stdout.components(separatedBy: "sealNotOpened").count - 1 == 3, "\(partial.stdout)")
        let repaired = try await CLIResult.run(["verify", "--repair"] + newOnly, environment: nil)
        #expect(repaired.status == 1, "\(repaired.stdout)\(repaired.stderr)")
        #expect(!repaired.stdout.contains("Salvaged"), "\(repaired.stdout)")
        try await withStore(rotated) { storage async throws in
            #expect(try await storage.count(Note.self) == 4)
            for n in 0..<4 { #expect(try await storage.fetch(Note.self, id: "n\(n)")?.text == "rotating \(n)") }
        }
        let missing = try await CLIResult.run(
            ["get", "Note", "n1", "--store", store, "--previous-key-file", old], environment: nil)
        #expect(missing.status != 0 && missing.stderr.contains("--key-file"), "\(missing.stderr)")
    }

    /// Maintenance given a new key and the store's key as a previous one reads the store but leaves its key
    /// check alone: an app with only the old key still opens it. A salvage given only a key that opens none
    /// of the records refuses and changes nothing.
    @Test func maintenanceWithANewKeyLocksNoOneOutAndASalvageKeepsWhatItCannotOpen() async throws {
        let directory = temporaryDirectory()
        try await withStore(EncryptionTests.configuration(directory)) { storage async throws in
            try await storage.save(contentsOf: (0..<3).map { Note(id: "n\($0)", text: "kept \($0)") })
        }
        let store = EncryptionTests.configuration(directory).storeDirectory
        let new = try Self.keyFile(EncryptionTests.otherKey).path
        let old = try Self.keyFile(EncryptionTests.key).path
        for command in [["verify"], ["get", "Note", "n1"], ["stats"], ["purge-expired"]] {
            let result = try await CLIResult.run(
                command + ["--store", store.path, "--key-file", new, "--previous-key-file", old], environment: nil)
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
        try await withStore(EncryptionTests.configuration(directory)) { storage async throws in
            #expect(try await storage.fetch(Note.self, id: "n2")?.text == "kept 2")
        }
        // The app rotates: it opens with the new key and the old one, and reseals what it reads (n0).
        let rotated = EncryptionTests.configuration(
            directory, key: EncryptionTests.otherKey, previous: [EncryptionTests.key])
        try await withStore(rotated) { storage async throws in
            #expect(try await storage.fetch(Note.self, id: "n0")?.text == "kept 0")
        }
        let dataFile = store.appendingPathComponent("data.mdb")
        let before = try Data(contentsOf: dataFile)
        do {
            _ = try await StoreMaintenance.salvage(
                directory: store, encryption: StorageEncryption(key: EncryptionTests.otherKey))
            Issue.record("a salvage without the old key ran")
        } catch MaintenanceError.invalidArgument(let reason) {
            #expect(reason.contains("2 records") && reason.contains("--previous-key-file"), "\(reason)")
        }
        #expect(try Data(contentsOf: dataFile) == before)
        let salvaged = try await StoreMaintenance.salvage(directory: store, encryption: rotated.encryption)
        #expect(salvaged.salvaged == 3 && salvaged.lost.isEmpty, "\(salvaged.lost)")
        try await withStore(rotated) { storage async throws in
            for n in 0..<3 { #expect(try await storage.fetch(Note.self, id: "n\(n)")?.text == "kept \(n)") }
        }
    }

    /// A key given to a command on a store that is not encrypted: the tool reads the store (an app is refused)
    /// and says the key was not used, rather than let the user believe the store is encrypted.
    @Test func aKeyForAPlainStoreIsNotedAsUnused() async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(Note(id: "n1", text: "plain"))
        }
        let store = diskConfiguration(directory).storeDirectory.path
        let key = try Self.keyFile(EncryptionTests.key)
        let result = try await CLIResult.run(
            ["get", "Note", "n1", "--store", store, "--key-file", key.path], environment: nil)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("plain"))
        #expect(result.stderr.contains("not encrypted"), "\(result.stderr)")
        let plain = try await CLIResult.run(["get", "Note", "n1", "--store", store], environment: nil)
        #expect(!plain.stderr.contains("not encrypted"))
    }

    /// The transaction of the newest meta page of the data file at `path`, read as another process writes it.
    private static func newestTransaction(_ path: String) throws -> UInt64 {
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var pages = DataFilePages(descriptor: descriptor)
        return try #require(DataFileWalk.newestMeta(&pages).0).transactionID
    }

    @Test func rekeyKilledInTheMiddleFinishesWhenRunAgain() async throws {
        let directory = temporaryDirectory()
        let notes = (0..<6_000).map { Note(id: "n\($0)", text: "rotating \($0)") }
        try await withStore(EncryptionTests.configuration(directory)) { storage async throws in
            try await storage.save(contentsOf: notes)
        }
        let store = EncryptionTests.configuration(directory).storeDirectory.path
        let old = try Self.keyFile(EncryptionTests.key)
        let new = try Self.keyFile(EncryptionTests.otherKey)
        let arguments = ["rekey", "--store", store, "--key-file", old.path, "--new-key-file", new.path]
        var random = SplitMix64(seed: 26)
        let dataFile = store + "/data.mdb"
        for _ in 0..<3 {
            // Killed after two to four commits of its own (a random time after the start let all three kills land
            // before the first batch on a loaded machine: review-89 T2), unless it finished first (the runs before it
            // left nothing to do). At least two: the first run's open commits the new key's check value before its
            // first batch (review-90 N2).
            let commits = 2 + random.next() % 3
            let before = try Self.newestTransaction(dataFile)
            let process = try HelperProcess(arguments, executable: "localstorage")
            let committed = await eventually(within: .seconds(120)) {
                try Self.newestTransaction(dataFile) >= before + commits || process.hasClosedOutput
            }
            try #require(committed, "the rekey neither committed \(commits) times nor ended in 120 s")
            await process.kill()
        }
        let finished = try await CLIResult.run(arguments, environment: nil)
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(try await CLIResult.run(arguments, environment: nil).stdout.contains("Resealed 0 records"))
        try await withStore(EncryptionTests.configuration(directory, key: EncryptionTests.otherKey)) {
            storage async throws in
            let read = try await storage.fetch(Note.self)
            #expect(read.count == notes.count)
            #expect(Set(read.map(\.text)) == Set(notes.map(\.text)))
        }
    }
}

/// A key rotation while an app that opened the store before it still writes with the old key.
@Suite struct RekeyBehindThePassTests {
    /// The rekey's last transaction resealed only records written without a key: a record an app still on the
    /// old key wrote behind the pass stayed under the old key, though the rekey reported success and the new
    /// key alone was to read every record.
    @Test(.timeLimit(.minutes(5))) func aRecordWrittenUnderTheOldKeyBehindThePassIsResealed() async throws {
        let directory = temporaryDirectory()
        let configuration = EncryptionTests.configuration(directory)
        let count = StoreMaintenance.rekeyBatchSize + 200
        try await withStore(configuration) { storage async throws in
            try await storage.save(
                contentsOf: (0..<count).map { StressRecord.make(id: "r\($0 + 10_000)", sequence: $0) })
        }
        let oldKeyHex = EncryptionTests.key.map { String(format: "%02x", $0) }.joined()
        let app = try HelperProcess(["overwrite", directory.path, oldKeyHex], withInput: true)
        _ = try await app.waitForLine("ready") { $0 == "ready" }
        let maintenance = try await StoreMaintenance(
            directory: configuration.storeDirectory,
            encryption: StorageEncryption(key: EncryptionTests.otherKey, previousKeys: [EncryptionTests.key]))
        let wrote = Mutex(false)
        let result = try await maintenance.rekey { progress in
            // After the first batch: the app saves a record the pass already went by (ids sort as text).
            guard progress.completed >= StoreMaintenance.rekeyBatchSize, !wrote.withLock({ $0 }) else { return }
            wrote.withLock { $0 = true }
            let done = DispatchSemaphore(value: 0)
            Task {
                let reply = try? await app.ask("save a-late 1")
                #expect(reply == "ok")
                done.signal()
            }
            done.wait()
        }
        #expect(wrote.withLock { $0 })
        #expect(result.failed == 0)
        app.closeInput()
        _ = await app.waitForExit()
        var newOnly = configuration
        newOnly.encryption = StorageEncryption(key: EncryptionTests.otherKey)
        weak let core = maintenance.core
        _ = consume maintenance
        #expect(await eventually { core == nil })
        try await withStore(newOnly) { storage async throws in
            #expect(try await storage.fetch(StressRecord.self, id: "a-late")?.sequence == 1)
            #expect(try await storage.count(StressRecord.self) == count + 1)
        }
    }
}
