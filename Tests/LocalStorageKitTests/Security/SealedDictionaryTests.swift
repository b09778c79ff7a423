import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// Compression and encryption together: a zstd dictionary is made of pieces of the payloads it was trained
/// on, so in an encrypted store it is sealed like them, and moves to a new key with them.
@Suite struct SealedDictionaryTests {
    /// 200 notes that share a marker, long enough to be compressed.
    static func notes(marker: String) -> [Note] {
        var random = SplitMix64(seed: 5)
        return (0..<200).map { n in
            var note = CompressionTests.note(n, length: 1_200, random: &random)
            note.text = "\(marker) \(n) " + note.text
            return note
        }
    }

    static func file(_ configuration: LocalStorageConfiguration) throws -> Data {
        try Data(contentsOf: configuration.storeDirectory.appendingPathComponent("data.mdb"))
    }

    @Test func anEncryptedCompressedStoreHoldsNoPayloadTextNotEvenInItsDictionaries() async throws {
        let marker = "dictionary-marker-\(UUID().uuidString.prefix(8))"
        var configuration = EncryptionTests.configuration(temporaryDirectory())
        configuration.compression = .zstd()
        let notes = Self.notes(marker: marker)
        try await withStore(configuration) { storage async throws in
            storage.core.sealing.compressor?.trainingSamples = 32
            try await storage.save(contentsOf: notes)
            #expect(storage.core.sealing.dictionaries.count >= 1)
        }
        #expect(try Self.file(configuration).range(of: Data(marker.utf8)) == nil)
        try await withStore(configuration) { storage async throws in
            #expect(storage.core.sealing.dictionaries.count >= 1)
            let all = try await storage.fetch(Note.self)
            #expect(
                Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) })
                    == Dictionary(
                        uniqueKeysWithValues: notes.map { ($0.id, $0) }))
        }
    }

    @Test func plainDictionariesAreSealedWhenEncryptionIsTurnedOnAndFollowARekey() async throws {
        let marker = "plain-dictionary-\(UUID().uuidString.prefix(8))"
        var plain = diskConfiguration(temporaryDirectory())
        plain.compression = .zstd()
        let notes = Self.notes(marker: marker)
        try await withStore(plain) { storage async throws in
            storage.core.sealing.compressor?.trainingSamples = 32
            try await storage.save(contentsOf: notes)
        }
        #expect(try Self.file(plain).range(of: Data(marker.utf8)) != nil)

        // Encryption turned on, then every record resealed: the old plaintext pages are free pages now,
        // and a compacted copy, which leaves free pages out, holds nothing readable.
        var sealed = plain
        sealed.encryption = StorageEncryption(key: EncryptionTests.key)
        do {
            let maintenance = try await StoreMaintenance(
                directory: plain.storeDirectory, encryption: sealed.encryption, sealingPlainStore: true)
            #expect(try await maintenance.rekey().failed == 0)
            let report = try await maintenance.compact(to: temporaryDirectory())
            #expect(report.verify.problems.isEmpty)
            let copyFile = URL(fileURLWithPath: report.output).appendingPathComponent("data.mdb")
            #expect(try Data(contentsOf: copyFile).range(of: Data(marker.utf8)) == nil)
        }

        // A second key: the dictionaries move to it at the first open with the old key as previous, then
        // the new key alone reads every record.
        do {
            let rotated = StorageEncryption(key: EncryptionTests.otherKey, previousKeys: [EncryptionTests.key])
            let maintenance = try await StoreMaintenance(directory: plain.storeDirectory, encryption: rotated)
            #expect(try await maintenance.rekey().failed == 0)
        }
        var newOnly = plain
        newOnly.encryption = StorageEncryption(key: EncryptionTests.otherKey)
        try await withStore(newOnly) { storage async throws in
            #expect(storage.core.sealing.dictionaries.count >= 1)
            #expect(try await storage.fetch(Note.self).count == notes.count)
            for note in notes.prefix(20) { #expect(try await storage.fetch(Note.self, id: note.id) == note) }
        }
    }

    /// A rekey that encrypts a plain, compressed store sealed its dictionaries in its open transaction, before
    /// any record: killed before the key check value was written, it left a store an app without the key still
    /// opens, whose compressed records then failed to decompress (and a keyless repair dropped them).
    @Test func aRekeyOfAPlainStoreKilledBeforeItsRecordsLeavesItReadableWithoutAKey() async throws {
        var plain = diskConfiguration(temporaryDirectory())
        plain.compression = .zstd()
        let notes = Self.notes(marker: "killed-rekey")
        try await withStore(plain) { storage async throws in
            storage.core.sealing.compressor?.trainingSamples = 32
            // The first half trains a dictionary; the second half is compressed with it.
            try await storage.save(contentsOf: notes.prefix(100))
            #expect(storage.core.sealing.dictionaries.count >= 1)
            try await storage.save(contentsOf: notes.suffix(100))
        }
        weak var opened: StoreCore?
        do {
            // Opened for the rekey, which never runs (killed before its first batch).
            let maintenance = try await StoreMaintenance(
                directory: plain.storeDirectory, encryption: StorageEncryption(key: EncryptionTests.key),
                sealingPlainStore: true)
            opened = maintenance.core
        }
        #expect(await eventually { opened == nil })
        try await withStore(plain) { storage async throws in
            for note in notes { #expect(try await storage.fetch(Note.self, id: note.id) == note) }
        }
        // The rekey, run again to the end, seals the dictionaries with the records.
        do {
            let maintenance = try await StoreMaintenance(
                directory: plain.storeDirectory, encryption: StorageEncryption(key: EncryptionTests.key),
                sealingPlainStore: true)
            #expect(try await maintenance.rekey().failed == 0)
            opened = maintenance.core
        }
        #expect(await eventually { opened == nil })
        var sealed = plain
        sealed.encryption = StorageEncryption(key: EncryptionTests.key)
        try await withStore(sealed) { storage async throws in
            #expect(storage.core.sealing.dictionaries.count >= 1)
            for note in notes { #expect(try await storage.fetch(Note.self, id: note.id) == note) }
        }
        await #expect(throws: LocalStorageError.self) { try await withStore(plain) { _ in } }
    }
}
