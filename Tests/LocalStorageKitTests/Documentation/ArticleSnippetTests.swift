// The code listings of the DocC articles (Sources/LocalStorageKit/LocalStorageKit.docc), compiled and, where
// they finish on their own, run against in-memory stores, so that the articles cannot drift from the API.
//
// Each listing sits between `// snippet: NAME` and `// snippet-end`; scripts/check-doc-snippets.py (run by
// `make docs`) fails when a ```swift block of an article is not, character for character after removing
// the common indentation, one of these regions, or when a region is used by no article. A listing that
// opens the default on-disk store or loops for ever is compiled only: it lives in a function no test calls.
// Each article's types live in an enum of its own, so that they do not meet the other tests' `Product` or
// `User`. Only the public API is imported, as a user's code would.
import Foundation
import LocalStorageKit
import Testing

// MARK: - Getting Started

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

// MARK: - Indexes and Queries

enum IndexSnippets {
    // snippet: indexes-user
    struct User: LocalStorageIndexed {
        enum Role: String, Codable, Sendable { case admin, editor, viewer }
        let id: String
        var email: String
        var role: Role
        var age: Int
        var lastSeen: Date

        static var storageIndexes: [StorageIndex<User>] {
            [
                .string("role") { $0.role.rawValue },
                .string("email") { $0.email.lowercased() },
                .number("age") { $0.age },
                .number("lastSeen") { $0.lastSeen },
            ]
        }
    }
    // snippet-end

    // snippet: indexes-listing
    struct Listing: LocalStorageIndexed {
        struct Address: Codable, Sendable {
            var city: String
        }

        let id: Int
        var address: Address
        var price: Int64
        var featuredUntil: Date?

        static var storageIndexes: [StorageIndex<Listing>] {
            [
                StorageIndex("city", \.address.city),
                StorageIndex("price", \.price),
                StorageIndex("featuredUntil", \.featuredUntil),
            ]
        }
    }
    // snippet-end

    static func users() async throws -> LocalStorage {
        let storage = try LocalStorage(configuration: .inMemory)
        let seen = Date(timeIntervalSince1970: 1_700_000_000)
        try await storage.save(contentsOf: [
            User(id: "u1", email: "ops.ada@example.com", role: .admin, age: 36, lastSeen: seen),
            User(id: "u2", email: "Ops.Lin@example.com", role: .editor, age: 24, lastSeen: seen + 60),
            User(id: "u3", email: "kim@example.com", role: .admin, age: 17, lastSeen: seen + 120),
            User(id: "u4", email: "ops.bo@example.com", role: .viewer, age: 29, lastSeen: seen + 180),
            User(id: "u5", email: "sam@example.com", role: .admin, age: 52, lastSeen: seen + 240),
        ])
        return storage
    }

    static func follow(_ storage: LocalStorage) async throws {
        // snippet: indexes-live
        for try await admins in storage.updates(of: User.self, matching: [.equals("role", "admin")]) {
            print("\(admins.count) admins")
        }
        // snippet-end
    }

    @Suite struct Tests {
        // snippet: indexes-generic
        func cheaperThan<Price: StorageIndexNumber>(_ price: Price) -> StorageIndexFilter {
            .lessThan("price", price)
        }
        // snippet-end

        @Test func query() async throws {
            let storage = try await users()
            // snippet: indexes-query
            let admins = try await storage.fetch(
                User.self,
                matching: [.equals("role", "admin"), .atLeast("age", 18)],
                orderedBy: .descending("lastSeen"),
                options: FetchOptions(limit: 20)
            )
            let count = try await storage.count(User.self, matching: [.equals("role", "admin")])
            let page = try await storage.page(
                User.self, matching: [.between("age", 18...30)],
                orderedBy: .ascending("age"), page: 1, pageSize: 50)
            // snippet-end
            #expect(admins.map(\.id) == ["u5", "u1"])
            #expect(count == 3)
            #expect(page.items.map(\.id) == ["u2", "u4"])
        }

        @Test func prefixAndList() async throws {
            let storage = try await users()
            // snippet: indexes-staff
            let staff = try await storage.fetch(
                User.self,
                matching: [.hasPrefix("email", "ops."), .oneOf("role", ["admin", "editor"])]
            )
            // snippet-end
            #expect(staff.map(\.id) == ["u1", "u2"])
        }

        @Test func exactNumbers() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let city = Listing.Address(city: "Lyon")
            try await storage.save(contentsOf: [
                Listing(id: 1, address: city, price: 9_007_199_254_740_992, featuredUntil: nil),
                Listing(id: 2, address: city, price: 9_007_199_254_740_993, featuredUntil: nil),
                Listing(id: 3, address: city, price: 99, featuredUntil: Date()),
                Listing(id: 4, address: city, price: 100, featuredUntil: nil),
            ])
            // snippet: indexes-exact
            let big: Int64 = 9_007_199_254_740_993  // 2^53 + 1, which a Double cannot hold
            let exactlyBig = try await storage.fetch(Listing.self, matching: [.equals("price", big)])
            let under100 = try await storage.count(Listing.self, matching: [.lessThan("price", 99.5)])
            // snippet-end
            #expect(exactlyBig.map(\.id) == [2])
            #expect(under100 == 1)
            #expect(try await storage.count(Listing.self, matching: [cheaperThan(100)]) == 1)
            #expect(try await storage.count(Listing.self, matching: [.equals("city", "Lyon")]) == 4)
            #expect(try await storage.count(Listing.self, matching: [.atLeast("featuredUntil", Date.distantPast)]) == 1)
        }
    }
}

// MARK: - Observation

enum ObservationSnippets {
    struct TaskItem: LocalStorable {
        let id: String
        var title: String
    }

    struct User: LocalStorageIndexed {
        let id: String
        var role: String

        static var storageIndexes: [StorageIndex<User>] { [StorageIndex("role", \.role)] }
    }

    struct Post: LocalStorable {
        let id: String
        var text: String
    }

    static func watchTasks(_ storage: LocalStorage) async {
        // snippet: observation-changes
        for await change in storage.changes(of: TaskItem.self) {
            switch change {
            case .inserted(let task):
                print("Created task: \(task.title)")
            case .updated(let task):
                print("Updated task: \(task.title)")
            case .deleted(let id):
                print("Deleted task ID: \(id)")
            case .expired(let id):
                print("Task expired ID: \(id)")
            case .cleared:
                print("All tasks cleared from cache")
            }
        }
        // snippet-end
    }

    @MainActor
    final class AdminList {
        var admins: [User] = []

        func follow(_ storage: LocalStorage) async throws {
            // snippet: observation-live
            for try await admins in storage.updates(of: User.self, matching: [.equals("role", "admin")]) {
                self.admins = admins
            }
            // snippet-end
        }
    }

    // snippet: observation-view-model
    @MainActor
    final class FeedViewModel {
        var posts: [Post] = []

        func observeFeed(storage: LocalStorage) async {
            do {
                for try await updatedPosts in storage.updates(of: Post.self) {
                    self.posts = updatedPosts
                }
            } catch {
                print("Stream terminated with error: \(error)")
            }
        }
    }
    // snippet-end

    /// Keeps a copy of the users up to date through the change feed.
    final class UserSync {
        let storage: LocalStorage
        var copy: [String: User] = [:]

        init(storage: LocalStorage) {
            self.storage = storage
        }

        func apply(_ change: StorageChange<User>) {
            switch change {
            case .inserted(let user), .updated(let user): copy[user.id] = user
            case .deleted(let id), .expired(let id): copy[id] = nil
            case .cleared: copy = [:]
            }
        }

        func reloadEverything(_ users: [User]) {
            copy = Dictionary(uniqueKeysWithValues: users.map { ($0.id, $0) })
        }

        // snippet: observation-catch-up
        func catchUp(from token: StorageChangeToken) async throws -> StorageChangeToken {
            do {
                let (changes, next) = try await storage.changes(of: User.self, since: token)
                for change in changes {
                    apply(change)
                }
                return next
            } catch LocalStorageError.changeTokenExpired {
                let mark = try await storage.changeToken()
                reloadEverything(try await storage.fetch(User.self))
                return mark
            }
        }
        // snippet-end
    }

    @Suite struct Tests {
        @MainActor @Test func viewModelFollowsTheFeed() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let viewModel = FeedViewModel()
            // snippet: observation-task
            let observation = Task { await viewModel.observeFeed(storage: storage) }
            // … later:
            observation.cancel()
            // snippet-end
            await observation.value
            let following = Task { await viewModel.observeFeed(storage: storage) }
            try await storage.save(Post(id: "p1", text: "Hello"))
            let deadline = ContinuousClock.now + .seconds(10)
            while viewModel.posts.isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            following.cancel()
            #expect(viewModel.posts.map(\.id) == ["p1"])
        }

        @Test func changeFeed() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            // snippet: observation-feed
            let mark = try await storage.changeToken()  // Codable: keep it anywhere
            // … later, even in another process or after a relaunch:
            let (changes, next) = try await storage.changes(of: User.self, since: mark)
            // snippet-end
            #expect(changes.isEmpty)
            #expect(next == mark)
        }

        @Test func catchUp() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let sync = UserSync(storage: storage)
            let start = try await storage.changeToken()
            try await storage.save(User(id: "u1", role: "admin"))
            try await storage.save(User(id: "u2", role: "editor"))
            try await storage.delete(User.self, id: "u1")
            let next = try await sync.catchUp(from: start)
            #expect(sync.copy.keys.sorted() == ["u2"])
            #expect(next > start)
        }
    }
}

// MARK: - Migrations

enum MigrationSnippets {
    // snippet: migrations-user-profile
    struct UserProfile: LocalStorageVersioned {
        let id: String
        var fullName: String
        var email: String

        static var currentVersion: Int { 2 }

        static var migrations: [StorageMigration] {
            [
                StorageMigration(from: 1, to: 2) { oldData in
                    guard var json = try JSONSerialization.jsonObject(with: oldData) as? [String: Any] else {
                        throw CocoaError(.coderReadCorrupt)
                    }
                    let first = json.removeValue(forKey: "firstName") as? String ?? ""
                    let last = json.removeValue(forKey: "lastName") as? String ?? ""
                    json["fullName"] = "\(first) \(last)".trimmingCharacters(in: .whitespaces)
                    return try JSONSerialization.data(withJSONObject: json)
                }
            ]
        }
    }
    // snippet-end

    /// Version 1 of the same stored type, as an older app wrote it.
    struct UserProfileV1: LocalStorable {
        static var storageName: String { "UserProfile" }
        let id: String
        var firstName: String
        var lastName: String
        var email: String
    }

    struct LegacyPayload: Codable {
        var id: String
        var firstName: String
        var lastName: String
        var email: String
    }

    struct ModernPayload: Codable {
        var id: String
        var fullName: String
        var email: String

        init(legacy: LegacyPayload) {
            id = legacy.id
            fullName = "\(legacy.firstName) \(legacy.lastName)"
            email = legacy.email
        }
    }

    @Suite struct Tests {
        @Test func migrateAll() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            try await storage.save(
                UserProfileV1(
                    id: "p1", firstName: "Ada", lastName: "Lovelace",
                    email: "ada@example.com"))
            // snippet: migrations-migrate-all
            let migrated = try await storage.migrateAll(UserProfile.self) { progress in
                print("\(progress.processed) of \(progress.total)")
            }
            // snippet-end
            #expect(migrated == 1)
            #expect(try await storage.fetch(UserProfile.self, id: "p1")?.fullName == "Ada Lovelace")
            #expect(try await storage.metadata(UserProfile.self, id: "p1")?.version == 2)
        }

        @Test func codableStep() throws {
            // snippet: migrations-codable-step
            let v1ToV2 = StorageMigration(from: 1, to: 2) { data in
                let legacy = try JSONDecoder().decode(LegacyPayload.self, from: data)
                let upgraded = ModernPayload(legacy: legacy)
                return try JSONEncoder().encode(upgraded)
            }
            // snippet-end
            #expect(v1ToV2.from == 1 && v1ToV2.to == 2)
        }
    }
}

// MARK: - Transactions

enum TransactionSnippets {
    struct Order: LocalStorable {
        let id: String
        var cartID: String
        var sku: String
    }

    struct Cart: LocalStorable {
        let id: String
    }

    struct Stock: LocalStorable {
        let id: String
        var count: Int
    }

    enum ShopError: Error {
        case soldOut
    }

    struct User: LocalStorable {
        let id: String
    }

    struct Post: LocalStorageIndexed {
        let id: String
        var author: String

        static var storageIndexes: [StorageIndex<Post>] { [StorageIndex("author", \.author)] }
    }

    @Suite struct Tests {
        @Test func writeAndRead() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            try await storage.save(contentsOf: [Stock(id: "sku_1", count: 3)])
            try await storage.save(Cart(id: "cart_1"))
            try await storage.save(User(id: "u1"))
            try await storage.save(Post(id: "post_1", author: "u1"))
            let order = Order(id: "order_1", cartID: "cart_1", sku: "sku_1")
            // snippet: transactions-write-read
            let left = try await storage.write { tx in
                try tx.save(order, expiration: .days(30))
                try tx.delete(Cart.self, id: order.cartID)
                guard var stock = try tx.fetch(Stock.self, id: order.sku) else { throw ShopError.soldOut }
                stock.count -= 1
                try tx.save(stock)
                return stock.count
            }
            let (user, posts) = try await storage.read { tx in
                (try tx.fetch(User.self, id: "u1"), try tx.fetch(Post.self, matching: [.equals("author", "u1")]))
            }
            // snippet-end
            #expect(left == 2)
            #expect(user?.id == "u1")
            #expect(posts.map(\.id) == ["post_1"])
            #expect(try await storage.fetch(Cart.self, id: "cart_1") == nil)
        }
    }
}

// MARK: - Configuring a Store

enum ConfigurationSnippets {
    static func configured() throws -> LocalStorage {
        // snippet: configuration-fields
        var config = LocalStorageConfiguration()
        config.databaseDirectory = .applicationSupportDirectory  // on Linux: $XDG_DATA_HOME or ~/.local/share
        config.durability = .relaxed  // .full (default), .relaxed (MDB_NOMETASYNC), .none (MDB_NOSYNC)
        config.autoPurgeExpiredOnRead = true  // delete the expired records reads meet
        config.mapSize = 64 << 20  // initial map; grows on demand…
        config.maxMapSize = 8 << 30  // …up to this, then saves throw .storageFull
        config.codec = .binary  // the default; .json stores Foundation JSON
        config.logger = ConsoleStorageLogger(minimumLevel: .info)
        let storage = try LocalStorage(configuration: config)
        // snippet-end
        return storage
    }

    static func logged() throws -> LocalStorage {
        // snippet: configuration-logger
        let logged = try LocalStorage(configuration: .default, logger: ConsoleStorageLogger(minimumLevel: .warning))
        // snippet-end
        return logged
    }
}

// MARK: - A Bounded Cache

enum BoundedCacheSnippets {
    static func configure() async throws -> StorageStatistics {
        // snippet: bounded-cache-configuration
        var config = LocalStorageConfiguration()
        config.limits = StorageLimits(maxRecords: 100_000, maxBytes: 512 << 20)  // the whole store
        config.evictionPolicy = .adaptive  // default; .leastRecentlyUsed, .leastRecentlyUpdated, .soonestExpiring
        config.memoryCache = MemoryCacheConfiguration(maxRecords: 10_000, maxBytes: 64 << 20)  // nil: off
        let storage = try LocalStorage(configuration: config)

        struct Thumbnail: LocalStorable {
            let id: String
            var png: Data
            static var storageLimits: StorageLimits? { StorageLimits(maxRecords: 1_000) }  // one type
        }
        let usage = try await storage.statistics()  // StorageStatistics
        // snippet-end
        _ = Thumbnail(id: "t", png: Data())
        return usage
    }
}

// MARK: - Sharing a Cache Between Hosts

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

// MARK: - Protecting Cached Data

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

// MARK: - Loading Through the Cache

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

    @Suite struct LoadingThroughTheCacheArticle {
        @Test func loadsOnceThenServesTheRecord() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let (product, fresh) = try await LoadingThroughTheCacheSnippets.load(storage, catalog: Catalog())
            #expect(product?.title == "Loaded sku_108")
            #expect(fresh?.id == product?.id)
            #expect(try await storage.count(Product.self) == 1)
        }
    }
}

// MARK: - Reliability

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
