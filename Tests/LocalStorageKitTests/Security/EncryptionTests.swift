import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// Sealed payloads (API.md "Security and space", `encryption`).
@Suite struct EncryptionTests {
    /// Whether `error` is `decodingFailed` naming the record `id` (quoted), and saying `saying` when given.
    static func isDecodingFailure(_ error: any Error, naming id: String, saying: String? = nil) -> Bool {
        guard case LocalStorageError.decodingFailed(let reason) = error else { return false }
        return reason.contains("\"\(id)\"") && saying.map(reason.contains) ?? true
    }

    static let key = Data((0..<32).map { UInt8($0) })
    static let otherKey = Data((0..<32).map { UInt8(200 - $0) })

    static func configuration(_ directory: URL, key: Data? = key, previous: [Data] = []) -> LocalStorageConfiguration {
        var configuration = diskConfiguration(directory)
        configuration.encryption = key.map { StorageEncryption(key: $0, previousKeys: previous) }
        return configuration
    }

    /// The text of a failed open.
    static func openFailure(_ configuration: LocalStorageConfiguration) -> String? {
        do {
            _ = try LocalStorage(configuration: configuration)
            return nil
        } catch LocalStorageError.openFailed(_, let reason) {
            return reason
        } catch {
            return "\(error)"
        }
    }

    @Test func anEncryptedStoreReadsBackAndItsFileHoldsNoneOfThePayloadText() async throws {
        let directory = temporaryDirectory()
        let secret = "confidential-marker-\(UUID().uuidString)"
        let notes = (0..<50).map { Note(id: "n\($0)", text: "\(secret) number \($0)") }
        try await withStore(Self.configuration(directory)) { storage async throws in
            try await storage.save(contentsOf: notes)
            try await storage.save(Product(id: "p", title: secret, category: "books", price: 3, rating: 1))
            #expect(try await storage.fetch(Note.self, id: "n7") == notes[7])
            #expect(try await storage.fetch(Note.self).count == 50)
            #expect(try await storage.fetch(Product.self, matching: [.equals("category", "books")]).count == 1)
            try await storage.update(Note.self, id: "n3") { $0.text += " updated" }
        }
        let file = try Data(contentsOf: Self.configuration(directory).storeDirectory.appendingPathComponent("data.mdb"))
        #expect(file.range(of: Data(secret.utf8)) == nil)
        #expect(file.range(of: Data(" number 3".utf8)) == nil)
        try await withStore(Self.configuration(directory)) { storage async throws in
            #expect(try await storage.fetch(Note.self, id: "n3")?.text == "\(secret) number 3 updated")
            #expect(try await storage.fetch(Product.self, id: "p")?.title == secret)
        }
    }

    /// A sealed payload is opened into a buffer on the stack when it is small and on the heap when it is not:
    /// records of random sizes on both sides of the boundary read back as saved, in single and batch reads.
    @Test func sealedPayloadsOfEverySizeReadBack() async throws {
        var random = SplitMix64(seed: 0x5EA1)
        let notes = (0..<120).map { number in
            let length = Int(random.next() % 1_400)
            let text = String((0..<length).map { _ in Character(UnicodeScalar(UInt8(32 + random.next() % 95))) })
            return Note(id: "n\(number)", text: text)
        }
        try await withStore(Self.configuration(temporaryDirectory())) { storage async throws in
            try await storage.save(contentsOf: notes)
            for note in notes { #expect(try await storage.fetch(Note.self, id: note.id) == note) }
            let batch = try await storage.fetch(Note.self, ids: notes.map(\.id))
            #expect(batch == Dictionary(uniqueKeysWithValues: notes.map { ($0.id, $0) }))
        }
    }

    /// A second open in the process that differs from the first in its key says which side has one.
    /// The stored bytes (header and payload) of the note `id`, as they are in the map.
    static func storedNote(_ id: String, in storage: LocalStorage) async throws -> [UInt8] {
        let schema = try await storage.core.schema(for: Note.self)
        return try storage.core.environment.read { txn in
            guard let stored = try txn.get(schema.records, key: Array(id.utf8)) else {
                throw LocalStorageError.notFound(id: id)
            }
            return Array(stored)
        }
    }

    /// A record sealed with a seal version this library does not know is a newer version's: a save over it throws and
    /// leaves it as it was (it was overwritten, though API.md says nothing a newer version wrote is; /work/trial60.md).
    @Test func aRecordSealedWithAnUnknownSealVersionIsNotOverwritten() async throws {
        try await withStore(Self.configuration(temporaryDirectory())) { storage async throws in
            try await storage.save(Note(id: "n", text: "sealed"))
            var stored = try await Self.storedNote("n", in: storage)
            let payloadStart = Int(stored[2]) | Int(stored[3]) << 8
            stored[payloadStart] = 0x7F  // a seal version from the future
            try await Self.storeNote(stored, as: "n", in: storage)
            await #expect(throws: LocalStorageError.self) { try await storage.save(Note(id: "n", text: "newer?")) }
            #expect(try await Self.storedNote("n", in: storage) == stored)
            try await storage.delete(Note.self, id: "n")  // a delete removes it, as for other newer records
            #expect(try await storage.count(Note.self) == 0)
        }
    }

    /// Stores `bytes` as the note `id` by hand, as a program writing the data file would.
    static func storeNote(_ bytes: [UInt8], as id: String, in storage: LocalStorage) async throws {
        let schema = try await storage.core.schema(for: Note.self)
        try await storage.core.writer.perform { context in
            try context.txn.put(schema.records, key: Array(id.utf8), value: bytes)
        }
    }

    @Test func aSecondOpenWithOrWithoutAKeySaysWhichSideHasOne() async throws {
        let directory = temporaryDirectory()
        let keyed = try LocalStorage(configuration: Self.configuration(directory))
        let withoutKey = Self.openFailure(Self.configuration(directory, key: nil))
        #expect(withoutKey?.contains("with a key, this open gives none") == true, "\(withoutKey ?? "opened")")
        let otherKey = Self.openFailure(Self.configuration(directory, key: Self.otherKey))
        #expect(otherKey?.contains("with other keys") == true, "\(otherKey ?? "opened")")
        withExtendedLifetime(keyed) {}
        let plainDirectory = temporaryDirectory()
        let plain = try LocalStorage(configuration: Self.configuration(plainDirectory, key: nil))
        let withKey = Self.openFailure(Self.configuration(plainDirectory))
        #expect(withKey?.contains("without encryption, this open gives a key") == true, "\(withKey ?? "opened")")
        withExtendedLifetime(plain) {}
    }

    @Test func aWrongOrMissingKeyFailsAtOpenAndAWrongLengthIsExplained() async throws {
        let directory = temporaryDirectory()
        try await withStore(Self.configuration(directory)) { try await $0.save(Note(id: "a", text: "x")) }
        let wrong = try #require(Self.openFailure(Self.configuration(directory, key: Self.otherKey)))
        #expect(wrong.contains("not this store's key"))
        let missing = try #require(Self.openFailure(Self.configuration(directory, key: nil)))
        #expect(missing.contains("encrypted"))
        let fresh = temporaryDirectory()
        let short = try #require(Self.openFailure(Self.configuration(fresh, key: Data([1, 2, 3]))))
        #expect(short.contains("32 bytes"))
        // No store was made for a key that cannot be.
        let dataFile = Self.configuration(fresh).storeDirectory.appendingPathComponent("data.mdb")
        #expect(!FileManager.default.fileExists(atPath: dataFile.path))
        // The right key still opens it.
        try await withStore(Self.configuration(directory)) { storage async throws in
            #expect(try await storage.fetch(Note.self, id: "a")?.text == "x")
        }
    }

    @Test func aFlippedByteInASealedPayloadIsADecodingFailureNamingTheID() async throws {
        try await withStore(Self.configuration(temporaryDirectory())) { storage async throws in
            try await storage.save(contentsOf: [Note(id: "a", text: "alpha"), Note(id: "b", text: "beta")])
            var bytes = try await Self.storedNote("a", in: storage)
            bytes[bytes.count - 20] ^= 0x01
            try await Self.storeNote(bytes, as: "a", in: storage)
            await #expect {
                try await storage.fetch(Note.self, id: "a")
            } throws: { error in
                Self.isDecodingFailure(error, naming: "a", saying: "authentication")
            }
            #expect(try await storage.fetch(Note.self, id: "b")?.text == "beta")
            // A listing that meets the bad row names it (the damaged-record policy).
            await #expect {
                try await storage.fetch(Note.self)
            } throws: { error in
                Self.isDecodingFailure(error, naming: "a")
            }
        }
    }

    @Test func aRecordCopiedUnderAnotherIDFailsAuthentication() async throws {
        try await withStore(Self.configuration(temporaryDirectory())) { storage async throws in
            try await storage.save(Note(id: "mine", text: "private"))
            try await Self.storeNote(try await Self.storedNote("mine", in: storage), as: "theirs", in: storage)
            await #expect {
                try await storage.fetch(Note.self, id: "theirs")
            } throws: { error in
                Self.isDecodingFailure(error, naming: "theirs")
            }
            #expect(try await storage.fetch(Note.self, id: "mine")?.text == "private")
        }
    }

    /// An encrypted store holds sealed payloads only: a plain record's bytes put in by hand (the same type and
    /// id, written by a store without the key) are refused as an altered one is, and `verify` names them.
    @Test func anUnsealedPayloadInAnEncryptedStoreIsRefused() async throws {
        let directory = temporaryDirectory()
        let forged = try await withStore(Self.configuration(temporaryDirectory(), key: nil)) { plain async throws in
            try await plain.save(Note(id: "acct", text: "forged"))
            return try await Self.storedNote("acct", in: plain)
        }
        try await withStore(Self.configuration(directory)) { storage async throws in
            try await storage.save(contentsOf: [Note(id: "acct", text: "genuine"), Note(id: "other", text: "kept")])
            try await Self.storeNote(forged, as: "acct", in: storage)
            await #expect {
                try await storage.fetch(Note.self, id: "acct")
            } throws: { error in
                Self.isDecodingFailure(error, naming: "acct", saying: "not sealed")
            }
            #expect(try await storage.fetch(Note.self, id: "other")?.text == "kept")
        }
        do {
            let maintenance = try await StoreMaintenance(
                directory: directory, encryption: StorageEncryption(key: Self.key))
            let report = try maintenance.verify()
            #expect(report.problems.contains { "\($0)".contains("acct") }, "\(report.problems)")
            // `rekey` seals what it finds unsealed (the way out for a store an earlier version marked encrypted
            // while it still held plaintext records).
            #expect(try await maintenance.rekey() == (resealed: 1, failed: 0))
            // (The forged bytes came with their own update time, which no entry of the store holds: the type keeps
            // no update order, as nothing sorted it by update time, so verify finds nothing left.)
            let after = try maintenance.verify().problems
            #expect(after.isEmpty, "\(after)")
        }
        try await withStore(Self.configuration(directory)) { storage async throws in
            #expect(try await storage.fetch(Note.self, id: "acct")?.text == "forged")
        }
    }

    /// A key given to a store whose records were written without one is refused at open (the store would
    /// hold payloads it cannot tell from forged ones); `rekey` seals them, and then the key opens the store.
    @Test func aPlainStoreTakesAKeyOnlyAfterARekeySealedItsRecords() async throws {
        let directory = temporaryDirectory()
        let notes = (0..<30).map { Note(id: "n\($0)", text: "plain \($0)") }
        try await withStore(Self.configuration(directory, key: nil)) { try await $0.save(contentsOf: notes) }
        let refused = try #require(Self.openFailure(Self.configuration(directory)))
        #expect(refused.contains("written without encryption"), "\(refused)")
        // A store that holds no record yet takes the key.
        let empty = temporaryDirectory()
        try await withStore(Self.configuration(empty, key: nil)) { _ = try await $0.count(Note.self) }
        try await withStore(Self.configuration(empty)) { try await $0.save(Note(id: "x", text: "sealed")) }

        do {
            let maintenance = try await StoreMaintenance(
                directory: directory, encryption: StorageEncryption(key: Self.key), sealingPlainStore: true)
            #expect(try await maintenance.rekey() == (resealed: 30, failed: 0))
            #expect(maintenance.sealing.holdsOnlySealed)
        }
        try await withStore(Self.configuration(directory)) { storage async throws in
            #expect(try await storage.fetch(Note.self).sorted { $0.id < $1.id } == notes.sorted { $0.id < $1.id })
        }
        #expect(Self.openFailure(Self.configuration(directory, key: nil))?.contains("encrypted") == true)
    }

    @Test func aStoreOpenedWithANewKeyAndThePreviousOneResealsWhatItReads() async throws {
        let directory = temporaryDirectory()
        let notes = (0..<20).map { Note(id: "n\($0)", text: "text \($0)") }
        try await withStore(Self.configuration(directory)) { try await $0.save(contentsOf: notes) }
        try await withStore(Self.configuration(directory, key: Self.otherKey, previous: [Self.key])) {
            storage async throws in
            #expect(try await storage.fetch(Note.self).count == 20)  // Reads every record: each is resealed.
            try await storage.save(Note(id: "new", text: "sealed with the new key"))
            try await storage.core.writer.perform { _ in }  // The reseals were handed to the writer first.
        }
        try await withStore(Self.configuration(directory, key: Self.otherKey)) { storage async throws in
            #expect(
                try await storage.fetch(Note.self).sorted { $0.id < $1.id }
                    == (notes + [Note(id: "new", text: "sealed with the new key")]).sorted { $0.id < $1.id })
        }
        // The old key alone no longer opens it.
        #expect(Self.openFailure(Self.configuration(directory, key: Self.key)) != nil)
    }
    /// A record resealed by a read keeps the declaration it was indexed with: a release that added an index and
    /// rotated the key moved records read by id before the first query to the new declaration with their old
    /// index values, so the re-index of stale records never found them and queries on the new index missed them.
    @Test func aResealKeepsTheRecordsDeclarationSoANewIndexFindsIt() async throws {
        let directory = temporaryDirectory()
        let items = (0..<6).map { Shelved(id: "s\($0)", category: $0 % 2 == 0 ? "books" : "toys") }
        try await withStore(Self.configuration(directory)) { try await $0.save(contentsOf: items) }
        try await withStore(Self.configuration(directory, key: Self.otherKey, previous: [Self.key])) {
            storage async throws in
            for item in items.prefix(3) {  // resealed with the new key, before any indexed read
                #expect(try await storage.fetch(IndexedShelved.self, id: item.id)?.category == item.category)
            }
            try await storage.core.writer.perform { _ in }  // The reseals were handed to the writer first.
            let books = try await storage.fetch(IndexedShelved.self, matching: [.equals("category", "books")])
            #expect(Set(books.map(\.id)) == ["s0", "s2", "s4"])
            #expect(try await storage.count(IndexedShelved.self, matching: [.equals("category", "toys")]) == 3)
        }
    }

    /// Records are sealed with AES-256-GCM where the CPU has it (seal version 2), else with XChaCha20-Poly1305
    /// (version 1); a store reads both, and the version is bound to the payload: changed, it fails to open.
    @Test func recordsSealedWithEitherCipherReadBackAndTheVersionIsBound() async throws {
        try await withStore(Self.configuration(temporaryDirectory())) { storage async throws in
            try await storage.save(contentsOf: [Note(id: "a", text: "alpha"), Note(id: "b", text: "beta")])
            let schema = try await storage.core.schema(for: Note.self)
            let sealing = try #require(schema.sealing)
            let key = Array("a".utf8)
            let portable = try await storage.core.writer.perform { context -> [UInt8] in
                guard let stored = try context.txn.get(schema.records, key: key).map(Array.init) else {
                    throw LocalStorageError.notFound(id: "a")
                }
                let headerLength = Int(stored[2]) | Int(stored[3]) << 8
                #expect(stored[headerLength] == (SodiumCipher.hasAES256GCM ? 2 : 1))
                // The same payload sealed with XChaCha20-Poly1305, as a CPU without AES (or an older
                // library) writes it.
                let (plain, format) = try stored.withUnsafeBytes { bytes in
                    let view = try RecordDecoding.view(of: bytes, Note.self, id: "a")
                    let plain = try sealing.withPayload(of: view, typeName: schema.name, id: "a") { bytes, _ in
                        Array(bytes)
                    }
                    return (plain, view.format)
                }
                let resealed = try sealing.seal(plain, format: format, typeName: schema.name, id: key, portable: true)
                let portable = Array(stored[0..<headerLength]) + resealed.bytes
                #expect(portable[headerLength] == 1)
                try context.txn.put(schema.records, key: key, value: portable)
                return portable
            }
            #expect(try await storage.fetch(Note.self, id: "a")?.text == "alpha")
            // The version byte changed to the other cipher's: authentication fails, naming the record.
            var altered = portable
            altered[Int(altered[2]) | Int(altered[3]) << 8] = 2
            try await Self.storeNote(altered, as: "a", in: storage)
            await #expect {
                try await storage.fetch(Note.self, id: "a")
            } throws: { error in
                Self.isDecodingFailure(error, naming: "a")
            }
            #expect(try await storage.fetch(Note.self, id: "b")?.text == "beta")
        }
    }

    /// AES-256-GCM's random 96-bit nonces are safe for about 2³² seals per key: the store counts them in
    /// `meta`, a block at a time, and seals with XChaCha20-Poly1305 once a key's count reaches the limit.
    @Test func aKeyTurnsToXChaChaOnceItsAESCountReachesTheLimit() async throws {
        let directory = temporaryDirectory()
        let countKey = PayloadSealing.aesCountKey(
            PayloadSealing.Key(id: 0, cipher: SodiumCipher.Key(Array(Self.key))))
        func count(_ storage: LocalStorage) throws -> UInt64? {
            try storage.core.environment.read { txn in
                try txn.get(storage.core.meta, key: countKey).map {
                    UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))
                }
            }
        }
        func sealVersion(_ storage: LocalStorage, _ id: String) async throws -> UInt8 {
            let stored = try await Self.storedNote(id, in: storage)
            return stored[Int(stored[2]) | Int(stored[3]) << 8]
        }
        try await withStore(Self.configuration(directory)) { storage async throws in
            try await storage.save(contentsOf: (0..<10).map { Note(id: "n\($0)", text: "text \($0)") })
            try await storage.save(Note(id: "a", text: "alpha"))
            guard SodiumCipher.hasAES256GCM else {
                #expect(try count(storage) == nil)
                #expect(try await sealVersion(storage, "a") == PayloadSealing.version)
                return
            }
            // One block counted for eleven seals.
            #expect(try count(storage) == PayloadSealing.aesSealBlock)
            #expect(try await sealVersion(storage, "a") == PayloadSealing.aesVersion)
            try await storage.core.writer.perform { context in
                try withUnsafeBytes(of: PayloadSealing.aesSealLimit.littleEndian) {
                    try context.txn.put(storage.core.meta, key: countKey, value: Array($0))
                }
            }
        }
        guard SodiumCipher.hasAES256GCM else { return }
        // A new process (here, a new open) finds the count at the limit: XChaCha20-Poly1305 from now on.
        try await withStore(Self.configuration(directory)) { storage async throws in
            try await storage.save(Note(id: "b", text: "beta"))
            #expect(try await sealVersion(storage, "b") == PayloadSealing.version)
            #expect(try count(storage) == PayloadSealing.aesSealLimit)
            #expect(try await storage.fetch(Note.self, id: "a")?.text == "alpha")
            #expect(try await storage.fetch(Note.self, id: "b")?.text == "beta")
        }
    }
}

/// A type first stored without indexes.
struct Shelved: LocalStorable {
    let id: String
    var category: String
    static var storageName: String { "Shelved" }
}

/// The same stored type in a later release, with an index.
struct IndexedShelved: LocalStorageIndexed {
    let id: String
    var category: String
    static var storageName: String { "Shelved" }
    static var storageIndexes: [StorageIndex<IndexedShelved>] { [StorageIndex("category", \.category)] }
}

/// Maintenance and an app in one process share the store's environment (and its sealing) whichever opens first:
/// the one opening second must ask for the keys the first opened it with.
@Suite struct SharedSealingTests {
    /// Maintenance first (no key): an app given a key got maintenance's sealing, wrote plaintext and no key
    /// check value.
    @Test func anAppWithAKeyIsRefusedAStoreMaintenanceOpenedWithout() async throws {
        let directory = temporaryDirectory()
        let configuration = EncryptionTests.configuration(directory)
        let maintenance = try await StoreMaintenance(directory: configuration.storeDirectory, creatingIfMissing: true)
        let failure = EncryptionTests.openFailure(configuration)
        #expect(failure?.contains("encryption differs") == true, "\(failure ?? "it opened")")
        _ = maintenance
    }

    /// An app first (key A): maintenance given key B got A's sealing without a word, and a rekey to B resealed
    /// nothing and reported success. Maintenance without a key shares the app's sealing (it needs none).
    @Test func maintenanceWithOtherKeysIsRefusedAStoreAnAppHasOpen() async throws {
        let directory = temporaryDirectory()
        let configuration = EncryptionTests.configuration(directory)
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "a", text: "sealed"))
        await #expect(throws: LocalStorageError.self) {
            _ = try await StoreMaintenance(
                directory: configuration.storeDirectory,
                encryption: StorageEncryption(key: EncryptionTests.otherKey, previousKeys: [EncryptionTests.key]))
        }
        let plain = try await StoreMaintenance(directory: configuration.storeDirectory)
        #expect(try plain.statistics().types.first?.records == 1)
        let same = try await StoreMaintenance(
            directory: configuration.storeDirectory, encryption: configuration.encryption)
        #expect(try same.verify().problems.isEmpty)
    }
}
