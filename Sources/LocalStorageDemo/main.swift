// A walk through the seed scenario on the embedded default store:
// save with a time to live, fetch, a repository, metadata, expiry, newest-first listing, indexed queries.
import Foundation
import LocalStorageKit

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

func run() async throws {
    let storage = try LocalStorage()
    print("Store: \(storage.configuration.databaseDirectory.appendingPathComponent("LocalStorage").path)")

    let product = Product(
        id: "sku_108", title: "Noise-cancelling headphones", category: "electronics",
        price: 249.0, rating: 4.7)
    try await storage.save(product, expiration: .hours(2))
    print("Saved \(product.id) with a 2-hour time to live")

    let item: Product? = try await storage.fetch(Product.self, id: "sku_108")
    print("Fetched \(item?.id ?? "nothing"): \(item?.title ?? "-") at \(item?.price ?? 0)")

    let service = ProductService(storage: storage)
    let catalog = [
        Product(id: "sku_201", title: "Swift in Depth", category: "books", price: 39.0, rating: 4.6),
        Product(id: "sku_202", title: "LMDB Internals", category: "books", price: 55.0, rating: 4.9),
        Product(id: "sku_203", title: "Mechanical keyboard", category: "electronics", price: 129.0, rating: 4.4),
        Product(id: "sku_204", title: "USB-C hub", category: "electronics", price: 59.0, rating: 3.9),
        Product(id: "sku_205", title: "Puzzle box", category: "toys", price: 25.0, rating: 4.1),
    ]
    for entry in catalog { try await service.cache(entry) }
    print("Cached \(catalog.count) products through a repository (1-day time to live)")
    print("Repository fetch sku_202: \(try await service.get(id: "sku_202")?.title ?? "nothing")")

    if let meta = try await storage.metadata(Product.self, id: "sku_108") {
        print(
            "Metadata of sku_108: created \(meta.createdAt), updated \(meta.updatedAt), "
                + "expires \(meta.expiresAt?.description ?? "never"), \(meta.sizeInBytes) bytes, "
                + "expired: \(meta.isExpired), version \(meta.version)")
    }

    let flash = Product(id: "sku_flash", title: "Flash sale", category: "toys", price: 1.0, rating: 5.0)
    try await storage.save(flash, expiration: .seconds(1))
    print(
        "Saved sku_flash with a 1-second time to live; visible now: "
            + "\(try await storage.fetch(Product.self, id: "sku_flash") != nil)")
    try await Task.sleep(for: .milliseconds(1100))
    print(
        "After 1.1 s: visible \(try await storage.fetch(Product.self, id: "sku_flash") != nil), "
            + "metadata says expired: \(try await storage.metadata(Product.self, id: "sku_flash")?.isExpired ?? true)")
    print("purgeExpired() deleted \(try await storage.purgeExpired()) record(s)")

    let newest = try await storage.fetch(Product.self, options: FetchOptions(limit: 3, sort: .newestFirst))
    print("Newest first (limit 3): \(newest.map(\.id).joined(separator: ", "))")

    let books = try await storage.fetch(
        Product.self, matching: [.equals("category", "books")],
        orderedBy: .descending("rating"), options: FetchOptions(limit: 10))
    print("Books by rating: \(books.map { "\($0.title) (\($0.rating))" }.joined(separator: ", "))")
    let midRange = try await storage.count(Product.self, matching: [.between("price", 50.0...150.0)])
    print("Products priced 50...150: \(midRange)")
    let page = try await storage.page(
        Product.self, matching: [.atLeast("price", 20.0)],
        orderedBy: .ascending("price"), page: 1, pageSize: 3)
    print(
        "Page \(page.page) of \(page.totalPages), total items: \(page.totalCount): "
            + page.items.map { "\($0.id) \($0.price)" }.joined(separator: ", "))
    print("Records of Product in the store: \(try await storage.count(Product.self))")
}

do {
    try await run()
} catch {
    FileHandle.standardError.write(Data("demo failed: \(error)\n".utf8))
    exit(1)
}
