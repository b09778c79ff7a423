import Foundation
@_spi(Benchmarks) import LocalStorageKit

/// The library under test, through its public API only.
final class LocalStorageKitSystem: Sendable {
    let storage: LocalStorage

    /// Opens (creating) a store in `directory`; a new store made with `countTree` false keeps none.
    init(
        directory: URL, durability: StorageDurability, codec: StorageCodec, mapSize: Int,
        countTree: Bool = true, memoryCache: MemoryCacheConfiguration? = nil
    ) throws {
        var configuration = LocalStorageConfiguration()
        configuration.memoryCache = memoryCache
        configuration.withoutCountTree = !countTree
        configuration.databaseDirectory = directory
        configuration.durability = durability
        configuration.codec = codec
        configuration.mapSize = mapSize
        configuration.expirySweepInterval = nil
        storage = try LocalStorage(configuration: configuration)
    }

    /// Opens the type's databases, so that the first timed call does not.
    func warmUp() async throws {
        _ = try await storage.count(Product.self)
    }

    // MARK: - Writing

    func save(contentsOf products: [Product]) async throws {
        try await storage.save(contentsOf: products)
    }

    /// One save after the other, each awaited until durable.
    func saveSequentially(_ products: [Product]) async throws {
        for product in products { try await storage.save(product) }
    }

    /// Every save at once from its own task; the writer commits whatever has queued up together.
    func saveConcurrently(_ products: [Product]) async throws {
        let storage = self.storage
        try await withThrowingTaskGroup(of: Void.self) { group in
            for product in products {
                group.addTask { try await storage.save(product) }
            }
            try await group.waitForAll()
        }
    }

    // MARK: - Reading

    func fetch(_ ids: ArraySlice<String>) async throws -> Int {
        var checksum = Checksum()
        for id in ids {
            if let product = try await storage.fetch(Product.self, id: id) { checksum.add(product) }
        }
        return checksum.value
    }

    /// The same fetches, from `@MainActor` code (a view model's context): each read runs on the main actor
    /// rather than hopping to another executor and back.
    @MainActor
    func fetchFromMainActor(_ ids: ArraySlice<String>) async throws -> Int {
        var checksum = Checksum()
        for id in ids {
            if let product = try await storage.fetch(Product.self, id: id) { checksum.add(product) }
        }
        return checksum.value
    }

    @MainActor
    func fetchFromMainActor(priceIn range: ClosedRange<Double>, limit: Int) async throws -> Int {
        let products = try await storage.fetch(
            Product.self, matching: [.between("price", range)],
            orderedBy: .ascending("price"), options: FetchOptions(limit: limit))
        return products.reduce(into: Checksum()) { $0.add($1) }.value
    }

    /// Every record, decoded, in id order.
    func scan() async throws -> Int {
        var checksum = Checksum()
        for product in try await storage.fetch(Product.self) { checksum.add(product) }
        return checksum.value
    }

    // MARK: - Indexed queries

    func fetch(priceIn range: ClosedRange<Double>, limit: Int) async throws -> Int {
        let products = try await storage.fetch(
            Product.self, matching: [.between("price", range)],
            orderedBy: .ascending("price"), options: FetchOptions(limit: limit))
        return products.reduce(into: Checksum()) { $0.add($1) }.value
    }

    func fetch(category: String, byDescendingPriceLimit limit: Int) async throws -> Int {
        let products = try await storage.fetch(
            Product.self, matching: [.equals("category", category)],
            orderedBy: .descending("price"), options: FetchOptions(limit: limit))
        return products.reduce(into: Checksum()) { $0.add($1) }.value
    }

    /// Products with a price in `range` in no particular order: with a limit, how many came back (any
    /// `limit` matches are a right answer); without one, an order-free fingerprint of them all.
    func fetchUnordered(priceIn range: ClosedRange<Double>, limit: Int?) async throws -> Int {
        let products = try await storage.fetch(
            Product.self, matching: [.between("price", range)], options: FetchOptions(limit: limit))
        return limit == nil ? Checksum.unordered(products) : products.count
    }

    /// Every product whose price is `price`, in no particular order: an order-free fingerprint.
    func fetch(priceEquals price: Double) async throws -> Int {
        Checksum.unordered(try await storage.fetch(Product.self, matching: [.equals("price", price)]))
    }

    func count(priceIn range: ClosedRange<Double>) async throws -> Int {
        try await storage.count(Product.self, matching: [.between("price", range)])
    }

    func page(priceIn range: ClosedRange<Double>, page: Int, pageSize: Int) async throws -> Int {
        let page = try await storage.page(
            Product.self, matching: [.between("price", range)],
            orderedBy: .ascending("price"), page: page, pageSize: pageSize)
        var checksum = page.items.reduce(into: Checksum()) { $0.add($1) }
        checksum.add(page.totalCount)
        return checksum.value
    }
}
