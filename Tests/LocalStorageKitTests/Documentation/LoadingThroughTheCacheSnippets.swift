// The code listings of the DocC article "Loading Through the Cache", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum LoadingThroughTheCacheSnippets {
    typealias Product = GettingStartedSnippets.Product

    /// The backend the listings load from.
    struct Catalog: Sendable {
        func product(id: String) async throws -> Product? {
            id == "none" ? nil : Product(id: id, title: "Loaded \(id)", category: "books", price: 9, rating: 4)
        }
    }

    static func load(_ storage: LocalStorage, catalog: Catalog) async throws -> (Product?, Product?) {
        // snippet: loading-fetch
        let product = try await storage.fetch(Product.self, id: "sku_108", expiration: .hours(2)) { id in
            try await catalog.product(id: id)  // Product?; nil: the source has none
        }
        // snippet-end
        // snippet: loading-policy
        let policy = LoadPolicy(
            expiration: .hours(2),  // how long a loaded record lives
            refreshAfter: .minutes(10),  // older than this: served at once, reloaded behind
            absentFor: .seconds(30),  // a nil from the loader is remembered this long
            loadTimeout: .seconds(30))  // a load that takes longer is given up
        let fresh = try await storage.fetch(Product.self, id: "sku_108", policy: policy) { id in
            try await catalog.product(id: id)
        }
        // snippet-end
        return (product, fresh)
    }

    /// Compiled only: the `for try await` loop follows the record for ever.
    static func many(_ storage: LocalStorage) async throws -> ([Product.ID: Product], Int) {
        // snippet: loading-many
        let some = try await storage.fetch(Product.self, ids: ["sku_1", "sku_2"])  // [Product.ID: Product]
        let gone = try await storage.delete(Product.self, matching: [.equals("category", "books")])  // Int
        for try await value in storage.updates(of: Product.self, id: "sku_108") {
            print(value?.title ?? "absent")  // now, then after each change by any process
        }
        // snippet-end
        return (some, gone)
    }

}
