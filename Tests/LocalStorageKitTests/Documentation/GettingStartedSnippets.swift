// The code listings of the DocC article "Getting Started", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum GettingStartedSnippets {
    // snippet: getting-started-product
    struct Product: LocalStorageIndexed {
        let id: String
        var title: String
        var category: String
        var price: Double
        var rating: Double

        static var storageIndexes: [StorageIndex<Product>] {
            [
                StorageIndex("category", \.category),
                StorageIndex("price", \.price),
                StorageIndex("rating", \.rating),
            ]
        }
    }
    // snippet-end

    // snippet: getting-started-service
    final class ProductService {
        private let repository: LocalRepository<Product>

        init(storage: LocalStorage) {
            self.repository = storage.repository(Product.self)
        }

        func cache(_ product: Product) async throws {
            try await repository.save(product, expiration: .days(1))
        }

        func get(id: String) async throws -> Product? {
            try await repository.fetch(id: id)
        }
    }
    // snippet-end

    static func openDefaultStore() throws -> LocalStorage {
        // snippet: getting-started-open
        let storage = try LocalStorage()
        // snippet-end
        return storage
    }

    static func watch(_ storage: LocalStorage) async {
        // snippet: getting-started-changes
        for await change in storage.changes(of: Product.self) {
            switch change {
            case .inserted(let product): print("Created: \(product.title)")
            case .updated(let product): print("Updated: \(product.title)")
            case .deleted(let id): print("Deleted: \(id)")
            case .expired(let id): print("Expired: \(id)")
            case .cleared: print("All products cleared")
            }
        }
        // snippet-end
    }

    static let catalogue = [
        Product(
            id: "sku_108", title: "Noise-cancelling headphones", category: "electronics", price: 249,
            rating: 4.7),
        Product(id: "sku_201", title: "Swift in Depth", category: "books", price: 39, rating: 4.6),
        Product(id: "sku_202", title: "LMDB Internals", category: "books", price: 55, rating: 4.9),
        Product(id: "sku_203", title: "Studio monitor", category: "electronics", price: 329, rating: 4.8),
    ]

    static func storeWithCatalogue() async throws -> LocalStorage {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: catalogue)
        return storage
    }

    @Suite struct Tests {
        @Test func saveAndFetch() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let product = catalogue[0]
            // snippet: getting-started-save-fetch
            try await storage.save(product, expiration: .hours(2))
            let item: Product? = try await storage.fetch(Product.self, id: "sku_108")
            // snippet-end
            #expect(item?.title == product.title)
        }

        @Test func expirationPolicies() {
            // snippet: getting-started-policies
            let policies: [CacheExpiration] = [
                .never,
                .seconds(30),
                .minutes(15),
                .hours(6),
                .days(7),
                .date(Date().addingTimeInterval(3600)),
            ]
            // snippet-end
            #expect(Set(policies).count == 6)
        }

        @Test func updateAndExpiration() async throws {
            let storage = try await storeWithCatalogue()
            // snippet: getting-started-update
            try await storage.update(Product.self, id: "sku_108") { $0.price = 199 }
            try await storage.setExpiration(Product.self, id: "sku_108", .days(7))
            let purged = try await storage.purgeExpired()
            // snippet-end
            #expect(purged == 0)
            #expect(try await storage.fetch(Product.self, id: "sku_108")?.price == 199)
            #expect(try await storage.metadata(Product.self, id: "sku_108")?.expiresAt != nil)
        }

        @Test func service() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let service = ProductService(storage: storage)
            try await service.cache(catalogue[1])
            #expect(try await service.get(id: "sku_201")?.title == "Swift in Depth")
        }

        @Test func listAndQuery() async throws {
            let storage = try await storeWithCatalogue()
            // snippet: getting-started-options
            let options = FetchOptions(limit: 20, offset: 40, sort: .newestFirst, purgeExpired: true)
            let recent = try await storage.fetch(Product.self, options: options)
            // snippet-end
            #expect(recent.isEmpty)  // offset 40 of 4 records
            // snippet: getting-started-query
            let filters: [StorageIndexFilter] = [
                .equals("category", "electronics"),
                .atLeast("rating", 4.5),
                .between("price", 100.0...500.0),
            ]
            let results = try await storage.fetch(Product.self, matching: filters)

            let topRated = try await storage.fetch(
                Product.self,
                matching: [.equals("category", "books")],
                orderedBy: .descending("rating"),
                options: FetchOptions(limit: 10)
            )
            // snippet-end
            #expect(results.map(\.id) == ["sku_108", "sku_203"])
            #expect(topRated.map(\.id) == ["sku_202", "sku_201"])
        }

        @Test func paging() async throws {
            let storage = try await storeWithCatalogue()
            // snippet: getting-started-page
            let page: StoragePage<Product> = try await storage.page(
                Product.self,
                matching: [.atLeast("price", 50.0)],
                orderedBy: .ascending("price"),
                page: 1,
                pageSize: 25
            )
            print("Page \(page.page) of \(page.totalPages), total items: \(page.totalCount)")
            if page.hasNextPage {
                // Fetch page 2 …
            }
            // snippet-end
            #expect(page.items.map(\.id) == ["sku_202", "sku_108", "sku_203"])
            #expect(page.totalPages == 1)
        }

        @Test func metadata() async throws {
            let storage = try await storeWithCatalogue()
            // snippet: getting-started-metadata
            if let meta = try await storage.metadata(Product.self, id: "sku_108") {
                print("Created at: \(meta.createdAt)")
                print("Updated at: \(meta.updatedAt)")
                print("Expires at: \(meta.expiresAt?.description ?? "Never")")
                print("Payload size: \(meta.sizeInBytes) bytes")
                print("Is expired: \(meta.isExpired)")
            }
            // snippet-end
            #expect(try await storage.metadata(Product.self, id: "sku_108")?.isExpired == false)
        }

        // snippet: getting-started-test
        @Test func savedProductReadsBack() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let repository = storage.repository(Product.self)
            let product = Product(id: "sku_1", title: "Kettle", category: "kitchen", price: 30, rating: 4)

            try await repository.save(product)
            let fetched = try await repository.fetch(id: product.id)

            #expect(fetched?.title == "Kettle")
        }
        // snippet-end

        @Test func errors() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            // snippet: getting-started-errors
            do {
                try await storage.update(Product.self, id: "sku_99") { $0.rating = 5 }
            } catch LocalStorageError.notFound(let id) {
                print("Record \(id) not found or expired")
            } catch LocalStorageError.decodingFailed(let reason) {
                print("Schema mismatch: \(reason)")
            } catch LocalStorageError.migrationFailed(let from, let to, let underlying) {
                print("Migration \(from)->\(to) failed: \(underlying)")
            } catch {
                print("Storage engine error: \(error)")
            }
            // snippet-end
            await #expect(throws: LocalStorageError.notFound(id: "sku_99")) {
                try await storage.update(Product.self, id: "sku_99") { $0.rating = 5 }
            }
        }
    }
}
