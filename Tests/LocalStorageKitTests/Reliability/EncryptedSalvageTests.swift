import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// Salvaging an encrypted and compressed store (issue 21): with its key, every readable record comes back
/// sealed again; without the key or with another one, the salvage refuses and changes nothing.
@Suite struct EncryptedSalvageTests {
    /// A store sealed with ``EncryptionTests/key``, compressed with several dictionaries, closed again;
    /// returns its configuration and what it holds.
    private func makeStore() async throws -> (LocalStorageConfiguration, [String: Note]) {
        var configuration = EncryptionTests.configuration(temporaryDirectory())
        configuration.compression = .zstd()
        var random = SplitMix64(seed: 21)
        var model: [String: Note] = [:]
        try await withStore(configuration) { storage async throws in
            storage.core.sealing.compressor?.trainingSamples = 64
            for _ in 0..<4 {
                let batch = (0..<100).map { _ in
                    CompressionTests.note(Int(random.next() % 300), length: Int(random.next() % 1_500), random: &random)
                }
                try await storage.save(contentsOf: batch)
                for note in batch { model[note.id] = note }
            }
            #expect(storage.core.sealing.dictionaries.count >= 2)
        }
        return (configuration, model)
    }

    /// A file holding ``EncryptionTests/key``, for the CLI's `--key-file`.
    static func keyFile() throws -> URL {
        let keyFile = temporaryDirectory().appendingPathComponent("key")
        try FileManager.default.createDirectory(
            at: keyFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try EncryptionTests.key.write(to: keyFile)
        return keyFile
    }

    /// Damages one page that holds no record: the last page of the file is a branch or leaf of some database; its
    /// header's flags made impossible send `verify --repair` to the salvage.
    static func damageLastPage(of store: URL) throws {
        let url = store.appendingPathComponent("data.mdb")
        var bytes = [UInt8](try Data(contentsOf: url))
        let lastPage = (bytes.count / 4_096 - 1) * 4_096
        bytes[lastPage + 10] = 0xFF
        bytes[lastPage + 11] = 0xFF
        try Data(bytes).write(to: url)
    }

    @Test func withItsKeyEveryRecordIsSalvagedAndSealedAgain() async throws {
        let (configuration, model) = try await makeStore()
        let report = try await StoreMaintenance.salvage(
            directory: configuration.storeDirectory, encryption: configuration.encryption)
        #expect(report.lost.isEmpty, "\(report.lost)")
        #expect(report.salvaged == model.count)
        let file = try Data(contentsOf: configuration.storeDirectory.appendingPathComponent("data.mdb"))
        let sample = try #require(model.values.first { $0.text.count > 40 })
        #expect(file.range(of: Data(sample.text.prefix(40).utf8)) == nil, "the salvaged store is sealed")
        try await withStore(configuration) { storage async throws in
            let all = try await storage.fetch(Note.self)
            #expect(Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) }) == model)
        }
        var keyless = configuration
        keyless.encryption = nil
        #expect(EncryptionTests.openFailure(keyless)?.contains("encrypted") == true)
    }

    @Test func withoutTheKeyOrWithAnotherTheSalvageRefusesAndChangesNothing() async throws {
        let (configuration, model) = try await makeStore()
        let file = configuration.storeDirectory.appendingPathComponent("data.mdb")
        let before = try Data(contentsOf: file)
        for encryption in [nil, StorageEncryption(key: EncryptionTests.otherKey)] {
            await #expect(throws: LocalStorageError.self) {
                try await StoreMaintenance.salvage(directory: configuration.storeDirectory, encryption: encryption)
            }
            #expect(try Data(contentsOf: file) == before)
        }
        try await withStore(configuration) { storage async throws in
            #expect(try await storage.count(Note.self) == model.count)
        }
    }

    @Test func theCLIRepairsADamagedEncryptedStoreWithItsKeyFile() async throws {
        let (configuration, model) = try await makeStore()
        let keyFile = try Self.keyFile()
        #expect(try StoreMaintenance.pageDamage(directory: configuration.storeDirectory).isEmpty)
        try Self.damageLastPage(of: configuration.storeDirectory)
        #expect(!(try StoreMaintenance.pageDamage(directory: configuration.storeDirectory)).isEmpty)

        let store = configuration.storeDirectory.path
        let repair = try await CLIResult.run(
            ["verify", "--repair", "--key-file", keyFile.path, "--store", store], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        try await withStore(configuration) { storage async throws in
            let all = try await storage.fetch(Note.self)
            #expect(!all.isEmpty)
            for note in all { #expect(model[note.id] == note) }
        }
    }

    /// A key given to the repair of a store that was never encrypted is not used: the salvage sealed the fresh
    /// store with it, and every app without a key was locked out (review-cli-52, 1). The CLI says so, as every
    /// other command does for a plain store.
    @Test func aKeyGivenForAPlainStoreIsNotUsedBySalvage() async throws {
        let configuration = diskConfiguration(temporaryDirectory())
        let notes = (0..<50).map { Note(id: "n\($0)", text: "plain text \($0)") }
        try await withStore(configuration) { storage async throws in try await storage.save(contentsOf: notes) }
        let report = try await StoreMaintenance.salvage(
            directory: configuration.storeDirectory, encryption: StorageEncryption(key: EncryptionTests.key))
        #expect(report.keyUnused)
        #expect(report.salvaged == notes.count)
        try await withStore(configuration) { storage async throws in
            #expect(try await storage.count(Note.self) == notes.count)
            #expect(try await storage.fetch(Note.self, id: "n7") == notes[7])
        }
        // The CLI on a damaged plain store with a key file: repaired, still plain, and a note.
        let keyFile = try Self.keyFile()
        try Self.damageLastPage(of: configuration.storeDirectory)
        let store = configuration.storeDirectory.path
        let repair = try await CLIResult.run(
            ["verify", "--repair", "--key-file", keyFile.path, "--store", store], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        #expect(repair.stderr.contains("the key file was not used"), "\(repair.stderr)")
        try await withStore(configuration) { storage async throws in
            #expect(try await storage.fetch(Note.self, id: "n7") == notes[7])
        }
    }
}
