import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// A rekey that changes payload sizes keeps the store's byte limit when the app's limits are known in its process
/// (review-94 #5: sealing a plain store grew every payload by its seal, and a store at its `maxBytes` stayed over it
/// until its next save; API.md: every commit leaves every limit satisfied).
@Suite struct RekeyLimitTests {
    @Test func sealingAPlainStoreKeepsItsByteLimit() async throws {
        let directory = temporaryDirectory()
        let notes = (0..<30).map { Note(id: "n\($0)", text: "plain \($0)") }
        try await withStore(EncryptionTests.configuration(directory, key: nil)) { try await $0.save(contentsOf: notes) }
        let plainBytes = try await withStore(EncryptionTests.configuration(directory, key: nil)) {
            try await $0.statistics().payloadBytes
        }

        let maintenance = try await StoreMaintenance(
            directory: directory, encryption: StorageEncryption(key: EncryptionTests.key), sealingPlainStore: true)
        // The app in the same process, with a byte limit the plain records fit and the sealed ones do not.
        var configuration = EncryptionTests.configuration(directory)
        configuration.limits = StorageLimits(maxBytes: plainBytes + 10)
        let storage = try LocalStorage(configuration: configuration)
        // A first commit keeps the limits the app brought (the plain records fit); the rekey's own commits must.
        try await storage.write { _ in }
        #expect(try await storage.statistics().evictions == 0)
        #expect(try await maintenance.rekey().failed == 0)
        let statistics = try await storage.statistics()
        #expect(statistics.payloadBytes <= plainBytes + 10, "\(statistics.payloadBytes) of \(plainBytes + 10)")
        #expect(statistics.evictions > 0)
        #expect(statistics.records == (try await storage.fetch(Note.self)).count)
    }
}
