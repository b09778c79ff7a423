// The code listings of the DocC article "Protecting Cached Data", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum ProtectingCachedDataSnippets {
    typealias Product = GettingStartedSnippets.Product

    /// A store with every protection on, in `directory`, sealed with `key` (32 bytes).
    static func protectedStore(in directory: URL, key: Data) throws -> LocalStorage {
        // snippet: protecting-cached-data
        var config = LocalStorageConfiguration()
        config.databaseDirectory = directory
        config.filePermissions = 0o600  // the default: the owner alone reads the files
        config.encryption = StorageEncryption(key: key)  // 32 bytes the app keeps (Keychain)
        config.compression = .zstd()  // compress, then seal
        config.compaction = .onOpen(whenFreeFractionExceeds: 0.5)
        let storage = try LocalStorage(configuration: config)
        // snippet-end
        return storage
    }

    /// Opens the store with a new key, reading records sealed with the old one.
    static func rotate(in directory: URL, oldKey: Data, newKey: Data) throws -> LocalStorage {
        // snippet: protecting-cached-data-rotation
        var config = LocalStorageConfiguration()
        config.databaseDirectory = directory
        config.encryption = StorageEncryption(key: newKey, previousKeys: [oldKey])
        let storage = try LocalStorage(configuration: config)
        // snippet-end
        return storage
    }

    @Suite struct Tests {
        @Test func protectedStoreReadsBackAfterRotation() async throws {
            let directory = temporaryDirectory()
            let (oldKey, newKey) = (Data(repeating: 1, count: 32), Data(repeating: 2, count: 32))
            let product = Product(id: "sku_1", title: "Lamp", category: "home", price: 25, rating: 4.5)
            var configuration = LocalStorageConfiguration()
            configuration.databaseDirectory = directory
            configuration.encryption = StorageEncryption(key: oldKey)
            configuration.compression = .zstd()
            configuration.compaction = .onOpen(whenFreeFractionExceeds: 0.5)
            try await withStore(configuration) { _ async throws in
                try await protectedStore(in: directory, key: oldKey).save(product)
            }
            let storage = try rotate(in: directory, oldKey: oldKey, newKey: newKey)
            #expect(try await storage.fetch(Product.self, id: "sku_1")?.title == "Lamp")
        }
    }
}
