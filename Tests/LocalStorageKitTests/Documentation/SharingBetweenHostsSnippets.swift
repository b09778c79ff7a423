// The code listings of the DocC article "Sharing a Cache Between Hosts", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum SharingBetweenHostsSnippets {
    typealias Product = GettingStartedSnippets.Product

    /// Compiled only: it needs a Redis server on the default port.
    static func share(_ product: Product) async throws -> (Product?, [Product], Int) {
        // snippet: sharing-between-hosts
        var config = LocalStorageConfiguration()
        config.sharedTier = SharedTierConfiguration(
            url: URL(string: "redis://127.0.0.1:6379/0")!,
            namespace: "shop")  // password:, database:, timeouts
        let storage = try LocalStorage(configuration: config)

        try await storage.save(product, expiration: .hours(2))  // on the server first, then in the local store
        let p = try await storage.fetch(Product.self, id: "sku_108")  // local first; a miss reads the server
        let top = try await storage.fetch(
            Product.self, matching: [.equals("category", "books")],
            orderedBy: .descending("rating"),
            options: FetchOptions(limit: 20, scope: .shared))  // on the server itself
        let n = try await storage.count(
            Product.self, matching: [.atLeast("price", 10)],
            options: FetchOptions(scope: .shared))  // ZLEXCOUNT, O(log n)
        // snippet-end
        return (p, top, n)
    }
}
