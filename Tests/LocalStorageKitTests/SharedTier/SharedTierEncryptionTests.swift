import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// An encrypted store with a shared tier: payloads are sealed before they reach the server, so neither the
/// server (and its append-only file) nor any instance's data file holds them in the clear. They used to go
/// to the server plain, and every instance stored the server's bytes as they were.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierEncryptionTests {
    let tier = SharedTestServer.configuration()

    /// An instance on the suite's namespace in a fresh directory, encrypted with `key`.
    private func instance(key: Data) async throws -> LocalStorage {
        var configuration = diskConfiguration()
        var tier = tier
        tier.maxStaleness = .seconds(30)
        configuration.sharedTier = tier
        configuration.encryption = StorageEncryption(key: key)
        let storage = try LocalStorage(configuration: configuration)
        _ = try await waitUntil { storage.sharedTier.map { $0.phase == .live } ?? false }
        return storage
    }

    private static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let needle = Array(needle.utf8)
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// An encrypted namespace keeps a key check value on the server: an instance with another key, or none, is
    /// refused before it writes (its save replaced the record with one the other instances could not open), and
    /// one given the namespace's key among its previous keys (a rotation) is let in.
    @Test func anInstanceWithAnotherKeyOrNoneIsRefusedByTheNamespace() async throws {
        let keyed = try await instance(key: EncryptionTests.key)
        try await keyed.save(Product(id: "sku_1", title: "genuine", category: "books", price: 3, rating: 4))
        var tier = tier
        tier.maxStaleness = .seconds(30)
        for (key, saying) in [(EncryptionTests.otherKey, "another key"), (nil, "has no key")] as [(Data?, String)] {
            var configuration = diskConfiguration()
            configuration.sharedTier = tier
            configuration.encryption = key.map { StorageEncryption(key: $0) }
            let intruder = try LocalStorage(configuration: configuration)
            await #expect {
                try await intruder.save(Product(id: "sku_1", title: "forged", category: "books", price: 3, rating: 4))
            } throws: { error in
                guard case LocalStorageError.sharedTierUnavailable(let reason) = error else { return false }
                return reason.contains(saying)
            }
        }
        let other = try await instance(key: EncryptionTests.key)
        #expect(try await other.fetch(Product.self, id: "sku_1")?.title == "genuine")
        // A rotation: the new key, with the namespace's among the previous ones.
        var configuration = diskConfiguration()
        configuration.sharedTier = tier
        configuration.encryption = StorageEncryption(key: EncryptionTests.otherKey, previousKeys: [EncryptionTests.key])
        let rotated = try LocalStorage(configuration: configuration)
        #expect(try await rotated.fetch(Product.self, id: "sku_1")?.title == "genuine")
    }

    @Test func payloadsAreSealedOnTheServerAndInEveryInstancesFile() async throws {
        let a = try await instance(key: EncryptionTests.key)
        let b = try await instance(key: EncryptionTests.key)
        let secret = "TOP-SECRET-\(UUID().uuidString)"
        try await a.save(Product(id: "sku_secret", title: secret, category: "books", price: 3, rating: 4))

        let onServer = try #require(try await a.sharedTier?.record(type: "Product", id: Array("sku_secret".utf8)))
        #expect(!Self.contains(onServer, secret))
        #expect(try await b.fetch(Product.self, id: "sku_secret")?.title == secret)
        // A new expiry writes the server's record back as it is stored: sealed once, still readable.
        try await a.setExpiration(Product.self, id: "sku_secret", .hours(1))
        let afterExpiry = try #require(try await a.sharedTier?.record(type: "Product", id: Array("sku_secret".utf8)))
        #expect(!Self.contains(afterExpiry, secret))
        #expect(try await b.fetch(Product.self, id: "sku_secret")?.title == secret)
        #expect(try await a.fetch(Product.self, id: "sku_secret")?.title == secret)
        // An update through the tier is sealed too.
        try await b.update(Product.self, id: "sku_secret") { $0.title = secret + "-2" }
        // It reaches A through the server's change channel.
        #expect(try await waitUntil { try await a.fetch(Product.self, id: "sku_secret")?.title == secret + "-2" })

        for storage in [a, b] {
            let file = storage.configuration.storeDirectory.appendingPathComponent("data.mdb")
            let bytes = try [UInt8](Data(contentsOf: file))
            #expect(!Self.contains(bytes, secret), "\(file.path)")
            #expect(Self.contains(bytes, "sku_secret"))  // ids stay readable, as documented
        }
    }

    @Test func anInstanceWithoutTheKeyCannotReadTheSharedRecords() async throws {
        let a = try await instance(key: EncryptionTests.key)
        try await a.save(Product(id: "sku_locked", title: "locked", category: "books", price: 1, rating: 1))
        // Another key never gets in sync with the namespace (its catch-up is refused), so it is not awaited.
        var configuration = diskConfiguration()
        var tier = tier
        tier.maxStaleness = .seconds(30)
        configuration.sharedTier = tier
        configuration.encryption = StorageEncryption(key: EncryptionTests.otherKey)
        let other = try LocalStorage(configuration: configuration)
        await #expect(throws: LocalStorageError.self) { try await other.fetch(Product.self, id: "sku_locked") }
    }
}
