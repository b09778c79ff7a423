import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// Compressed payloads (`compression: .zstd()`), against a model, with dictionaries retrained in between.
@Suite struct CompressionTests {
    /// A note of `length` characters: repetitive words (compress well) or random letters (do not).
    static func note(_ id: Int, length: Int, random: inout SplitMix64) -> Note {
        let words = ["order", "shipped", "customer", "invoice", "pending", "warehouse", "return", "paid"]
        var text = ""
        let isRandom = random.next() % 3 == 0
        while text.count < length {
            if isRandom {
                text.append(Character(UnicodeScalar(UInt8(33 + random.next() % 90))))
            } else {
                text += words[Int(random.next() % UInt64(words.count))] + " "
            }
        }
        return Note(id: "n\(id)", text: text)
    }

    @Test(arguments: [false, true])
    func mixedSizesAndRandomContentReadBackAsTheModel(sealed: Bool) async throws {
        let directory = temporaryDirectory()
        var configuration = sealed ? EncryptionTests.configuration(directory) : diskConfiguration(directory)
        configuration.compression = .zstd()
        var random = SplitMix64(seed: sealed ? 7 : 3)
        var model: [String: Note] = [:]
        var dictionaries = 0
        try await withStore(configuration) { storage async throws in
            storage.core.sealing.compressor?.trainingSamples = 64  // Retrain often: several dictionaries.
            for round in 0..<8 {
                let batch = (0..<100).map { _ in
                    Self.note(Int(random.next() % 400), length: Int(random.next() % 2_000), random: &random)
                }
                try await storage.save(contentsOf: batch)
                for note in batch { model[note.id] = note }
                if round % 3 == 2 {
                    let gone = model.keys.sorted().prefix(10)
                    for id in gone {
                        try await storage.delete(Note.self, id: id)
                        model[id] = nil
                    }
                }
                for (id, expected) in model.prefix(50) {
                    #expect(try await storage.fetch(Note.self, id: id) == expected)
                }
            }
            dictionaries = storage.core.sealing.dictionaries.count
            #expect(dictionaries >= 3)
        }
        // Reopened without compression: every record, of every dictionary or none, still reads.
        var plain = configuration
        plain.compression = .none
        try await withStore(plain) { storage async throws in
            let all = try await storage.fetch(Note.self)
            #expect(Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) }) == model)
            #expect(storage.core.sealing.dictionaries.count == dictionaries)
        }
        let maintenance = try await StoreMaintenance(
            directory: configuration.storeDirectory, encryption: configuration.encryption)
        #expect(try maintenance.verify().problems.isEmpty)
    }

    /// A process that has the store open reads records compressed with a dictionary another process trained
    /// after it loaded the store's dictionaries (they failed with "does not decompress").
    @Test func aDictionaryAnotherProcessTrainedIsLearnedOnRead() async throws {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.compression = .zstd()
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(StressRecord.make(id: "mine", sequence: 1))
        #expect(storage.core.sealing.dictionaries.count == 0)
        let writer = try HelperProcess(["compressed", directory.path, "1500"])
        try await writer.waitForLine("done") { $0 == "done" }
        #expect(await writer.waitForExit() == 0)
        for number in 0..<1500 {
            #expect(
                try await storage.fetch(StressRecord.self, id: "c\(number)")
                    == StressRecord.make(id: "c\(number)", sequence: number))
        }
        #expect(storage.core.sealing.dictionaries.count >= 1)
        let report = try await StoreMaintenance(directory: storage.core.directory).verify()
        #expect(report.isClean, "\(report.problems)")
    }

    /// An encrypted, compressed store's configuration in a new folder, and 1,200 notes of 300–800 characters, enough
    /// to train a dictionary.
    static func encryptedAndCompressed(seed: UInt64) -> (LocalStorageConfiguration, [Note]) {
        var configuration = EncryptionTests.configuration(temporaryDirectory())
        configuration.compression = .zstd()
        var random = SplitMix64(seed: seed)
        let notes = (0..<1_200).map { Self.note($0, length: 300 + Int(random.next() % 500), random: &random) }
        return (configuration, notes)
    }

    /// A record compressed with a dictionary that did not open (its sealed bytes altered in `meta`) said only that
    /// its payload "does not decompress" (trial73); it names the dictionary now, and the other records read.
    @Test func aRecordWhoseDictionaryDidNotOpenNamesIt() async throws {
        let (configuration, notes) = Self.encryptedAndCompressed(seed: 22)
        try await withStore(configuration) { storage async throws in
            try await storage.save(contentsOf: notes)
            // Half of them again, compressed with the dictionary the first batch trained.
            try await storage.save(contentsOf: Array(notes.prefix(600)))
            let meta = storage.core.meta
            try await storage.core.writer.perform { context in
                let (key, value) = try context.txn.withCursor(meta) { cursor in
                    let entry = try #require(try cursor.seek(atLeast: PayloadDictionaries.keyPrefix))
                    #expect(entry.key.starts(with: PayloadDictionaries.keyPrefix))
                    return (Array(entry.key), Array(entry.value))
                }
                var damaged = value
                damaged[damaged.count / 2] ^= 0x40
                try context.txn.put(meta, key: key, value: damaged)
            }
        }
        try await withStore(configuration) { storage async throws in
            var unreadable: [String] = []
            for note in notes {
                do {
                    #expect(try await storage.fetch(Note.self, id: note.id) == note)
                } catch LocalStorageError.decodingFailed(let reason) {
                    unreadable.append(reason)
                }
            }
            #expect(!unreadable.isEmpty && unreadable.count < notes.count)
            #expect(
                unreadable.allSatisfy { $0.contains("needs dictionary") && $0.contains("did not open") },
                "\(unreadable.first ?? "")")
        }
    }

    /// `rekey` changes only the seal: compressed payloads stay compressed (it wrote them back decompressed,
    /// several times larger, as the CLI has no compression setting), and every record reads back under the
    /// new key alone.
    @Test func rekeyKeepsPayloadsCompressed() async throws {
        let (configuration, notes) = Self.encryptedAndCompressed(seed: 21)
        let directory = configuration.databaseDirectory
        try await withStore(configuration) { try await $0.save(contentsOf: notes) }
        let before = try await StoreMaintenance(
            directory: configuration.storeDirectory, encryption: StorageEncryption(key: EncryptionTests.key)
        ).statistics().payloadBytes
        do {
            let maintenance = try await StoreMaintenance(
                directory: configuration.storeDirectory,
                encryption: StorageEncryption(key: EncryptionTests.otherKey, previousKeys: [EncryptionTests.key]))
            #expect(try await maintenance.rekey() == (resealed: notes.count, failed: 0))
            let after = try maintenance.statistics().payloadBytes
            #expect(after <= before + before / 20, "\(before) → \(after) payload bytes")
            #expect(try maintenance.verify().isClean)
        }
        var rotated = EncryptionTests.configuration(directory, key: EncryptionTests.otherKey)
        rotated.compression = .zstd()
        try await withStore(rotated) { storage async throws in
            let stored = try await storage.fetch(Note.self, options: FetchOptions())
            #expect(stored.count == notes.count)
            #expect(
                Dictionary(uniqueKeysWithValues: stored.map { ($0.id, $0.text) })
                    == Dictionary(uniqueKeysWithValues: notes.map { ($0.id, $0.text) }))
        }
    }

    @Test func compressionShrinksTheStoredPayloads() async throws {
        var configuration = diskConfiguration()
        configuration.compression = .zstd()
        var random = SplitMix64(seed: 11)
        try await withStore(configuration) { storage async throws in
            storage.core.sealing.compressor?.trainingSamples = 32
            let notes = (0..<200).map { n in
                var note = Self.note(n, length: 1_500, random: &random)
                note.text = "order shipped customer invoice " + note.text.filter { $0 != "~" }
                return note
            }
            try await storage.save(contentsOf: notes)
            let schema = try await storage.core.schema(for: Note.self)
            let (stored, plain) = try storage.core.environment.read { txn in
                try notes.reduce((0, 0)) { sum, note in
                    let bytes = try txn.get(schema.records, key: Array(note.id.utf8))
                    return (sum.0 + (bytes?.count ?? 0), sum.1 + note.text.utf8.count)
                }
            }
            #expect(stored < plain)
            #expect(try await storage.fetch(Note.self).count == 200)
        }
    }

    /// Every zstd frame ends with a checksum of its content (the frame header's checksum flag), so a damaged
    /// compressed payload fails to decompress, naming the record, instead of decoding to other values.
    @Test func compressedFramesCarryAChecksum() async throws {
        var configuration = diskConfiguration()
        configuration.compression = .zstd()
        var random = SplitMix64(seed: 12)
        try await withStore(configuration) { storage async throws in
            storage.core.sealing.compressor?.trainingSamples = 32
            let notes = (0..<100).map { Self.note($0, length: 800, random: &random) }
            try await storage.save(contentsOf: notes)
            try await storage.save(contentsOf: notes)  // again, with the dictionary the first batch trained
            var compressed: [String] = []
            for note in notes {
                let bytes = try await EncryptionTests.storedNote(note.id, in: storage)
                let view = try bytes.withUnsafeBytes { try RecordView($0) }
                guard view.envelope.contains(.compressed) else { continue }
                compressed.append(note.id)
                let payload = Array(view.payload)
                // Our dictionary id (4 bytes), the frame's magic (4 bytes), then its header descriptor.
                #expect(Array(payload[4..<8]) == [0x28, 0xB5, 0x2F, 0xFD])
                #expect(payload[8] & 0x04 != 0, "no checksum flag")
            }
            #expect(compressed.count > 50)
            let id = try #require(compressed.first)
            var damaged = try await EncryptionTests.storedNote(id, in: storage)
            damaged[damaged.count - 1] ^= 0x01  // the last byte: the checksum's
            try await EncryptionTests.storeNote(damaged, as: id, in: storage)
            let reason = await decodingFailure { _ = try await storage.fetch(Note.self, id: id) }
            #expect(reason?.contains("\"\(id)\"") == true && reason?.contains("decompress") == true, "\(reason ?? "")")
        }
    }

    /// Dictionaries come after twice as many payloads each time, so a busy store trains a few (it trained one
    /// every `trainingSamples` payloads, forever, and every open loads them all), and only the first KiB of each
    /// payload is kept as a sample (whole payloads were kept: a gigabyte for a thousand 1 MB photos).
    @Test func dictionariesComeEverMoreRarelyAndSamplesStaySmall() async throws {
        var configuration = diskConfiguration()
        configuration.compression = .zstd()
        var random = SplitMix64(seed: 31)
        try await withStore(configuration) { storage async throws in
            let compressor = try #require(storage.core.sealing.compressor)
            compressor.trainingSamples = 8
            var counts: [Int] = []
            for round in 0..<20 {
                let notes = (0..<100).map { Self.note(round * 100 + $0, length: 300, random: &random) }
                try await storage.save(contentsOf: notes)
                counts.append(storage.core.sealing.dictionaries.count)
            }
            // 2,000 payloads: dictionaries after 8, 24, 56, 120, 248, 504, 1,016 payloads (≈ 2/3 of them
            // are compressible text; the rest random letters, sampled too).
            #expect(counts.last.map { (4...8).contains($0) } == true, "\(counts)")
            #expect(counts == counts.sorted())
            compressor.trainingSamples = 1_000
            let large = (0..<50).map {
                Note(id: "large\($0)", text: String(repeating: "pending invoice ", count: 4_000))
            }
            try await storage.save(contentsOf: large)
            #expect(compressor.sampledBytes <= 50 * PayloadCompressor.sampleBytes, "\(compressor.sampledBytes)")
        }
    }

    /// A new dictionary never takes the id of one the store has: it overwrote it, and the records compressed
    /// with the old one stopped decoding.
    @Test func aDictionaryNeverTakesAnIDInUse() async throws {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.compression = .zstd()
        var random = SplitMix64(seed: 32)
        var model: [String: Note] = [:]
        try await withStore(configuration) { storage async throws in
            let compressor = try #require(storage.core.sealing.compressor)
            compressor.trainingSamples = 16
            compressor.idsToTry.withLock { $0 = [77, 77, 78] }
            for round in 0..<4 {
                // Each round in words of its own, so that each dictionary differs.
                let notes = (0..<40).map { n in
                    var note = Self.note(round * 40 + n, length: 400, random: &random)
                    note.text = String(repeating: "round\(round) ", count: 20) + note.text
                    return note
                }
                try await storage.save(contentsOf: notes)
                for note in notes { model[note.id] = note }
            }
            #expect(storage.core.sealing.dictionaries.dictionary(77) != nil)
            #expect(storage.core.sealing.dictionaries.dictionary(78) != nil)
        }
        try await withStore(configuration) { storage async throws in
            let all = try await storage.fetch(Note.self)
            #expect(Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) }) == model)
        }
    }
}
