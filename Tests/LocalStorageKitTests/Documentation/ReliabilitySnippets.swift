// The code listings of the DocC article "Reliability", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum ReliabilitySnippets {
    /// Opens the store in `configuration`, recreating it when its file is damaged.
    static func openOrRecreate(_ configuration: LocalStorageConfiguration) throws -> LocalStorage {
        let storage: LocalStorage
        // snippet: reliability-recreate-damaged
        do {
            storage = try LocalStorage(configuration: configuration)
        } catch LocalStorageError.openFailed(_, let reason) where reason.contains("damaged") {
            try LocalStorage.removeStore(at: configuration.databaseDirectory)
            storage = try LocalStorage(configuration: configuration)
        }
        // snippet-end
        return storage
    }

    @Suite struct ReliabilityArticle {
        @Test func aSoundStoreOpensAsItIs() async throws {
            var configuration = LocalStorageConfiguration()
            configuration.databaseDirectory = temporaryDirectory()
            let storage = try openOrRecreate(configuration)
            try await storage.save(
                GettingStartedSnippets.Product(
                    id: "sku_1", title: "Lamp", category: "home", price: 25, rating: 4.5))
            #expect(try await storage.count(GettingStartedSnippets.Product.self) == 1)
        }
    }
}
