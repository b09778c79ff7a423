import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Testing) @testable import LocalStorageKit

@Suite struct IndexQueryTests {
    static let names: [String?] = [nil, "", "a", "ab", "abc", "b", "b\u{0}c", "b\u{0}", "é", "éa", "z", "Zed", "ops.x"]
    static let tags = ["red", "green", "blue", "re", "redder"]
    static let scores: [Int?] = [nil, -3, -1, 0, 1, 2, 5, 40]
    static let weights: [Double?] = [nil, -1.5, 0, 0.5, 2, 3.25, 40]

    static func randomItem(_ id: String, _ rng: inout SplitMix64) -> Item {
        Item(
            id: id, name: names.randomElement(using: &rng) ?? nil, score: scores.randomElement(using: &rng) ?? nil,
            weight: weights.randomElement(using: &rng) ?? nil, tag: tags.randomElement(using: &rng) ?? "red")
    }

    static func randomFilter(_ rng: inout SplitMix64) -> (StorageIndexFilter, String, ReferenceStore.Condition) {
        let index = ["name", "score", "weight", "tag"].randomElement(using: &rng) ?? "name"
        let isString = index == "name" || index == "tag"
        let stringPool = (names.compactMap { $0 } + tags + ["b\u{0}b", "y", "ac"])
        func pickString() -> String { stringPool.randomElement(using: &rng) ?? "" }
        func pickNumber() -> Double { [-2, -1.5, -1, 0, 0.5, 1, 2, 3.25, 5, 41].randomElement(using: &rng) ?? 0 }
        let kind = Int.random(in: 0..<8, using: &rng)
        if isString {
            let a = pickString()
            let b = pickString()
            let (low, high) = Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) ? (a, b) : (b, a)
            let value = { (s: String) in ReferenceStore.Value.string(Array(s.utf8)) }
            switch kind {
            case 0: return (.equals(index, a), index, .equals(value(a)))
            case 1: return (.atLeast(index, a), index, .atLeast(value(a)))
            case 2: return (.atMost(index, a), index, .atMost(value(a)))
            case 3: return (.greaterThan(index, a), index, .greaterThan(value(a)))
            case 4: return (.lessThan(index, a), index, .lessThan(value(a)))
            case 5: return (.between(index, low...high), index, .between(value(low), value(high)))
            case 6: return (.oneOf(index, [a, b]), index, .oneOf([value(a), value(b)]))
            default:
                let prefix = String(a.prefix(Int.random(in: 0...2, using: &rng)))
                return (.hasPrefix(index, prefix), index, .prefix(Array(prefix.utf8)))
            }
        }
        let a = pickNumber()
        let b = pickNumber()
        let (low, high) = (min(a, b), max(a, b))
        // Whole numbers go in as Int, to check that Int bounds compare with Double values.
        let filter = a == a.rounded() ? numberFilter(kind, index, Int(a)) : numberFilter(kind, index, a)
        switch kind {
        case 0: return (filter, index, .equals(.number(a)))
        case 1: return (filter, index, .atLeast(.number(a)))
        case 2: return (filter, index, .atMost(.number(a)))
        case 3: return (filter, index, .greaterThan(.number(a)))
        case 4: return (filter, index, .lessThan(.number(a)))
        case 5: return (.between(index, low...high), index, .between(.number(low), .number(high)))
        default:
            return (.oneOf(index, [a, b, 99]), index, .oneOf([.number(a), .number(b), .number(99)]))
        }
    }

    /// A filter built from a generic number, as user code may write it.
    static func numberFilter<N: StorageIndexNumber>(_ kind: Int, _ index: String, _ value: N) -> StorageIndexFilter {
        switch kind {
        case 0: .equals(index, value)
        case 1: .atLeast(index, value)
        case 2: .atMost(index, value)
        case 3: .greaterThan(index, value)
        default: .lessThan(index, value)
        }
    }

    /// 900 records keep most conditions under the planner's estimate cap (``QueryExecutor/estimateCap``), so
    /// it collects and sorts; 2,000 put broad conditions above it, so it walks in the requested order and
    /// checks the other conditions on record headers. Both paths are compared with the model.
    @Test(arguments: [900, 2 * QueryExecutor.estimateCap])
    func randomQueriesMatchTheReferenceModel(records: Int) async throws {
        var rng = SplitMix64(seed: 0x5EED)
        let storage = try LocalStorage(configuration: .inMemory)
        var model = ReferenceStore()
        let ids = (0..<records).map { "i\(String($0 * 7919 % 100_000, radix: 36))" }
        // Initial bulk load: one batch, one timestamp.
        let initial = ids.map { IndexQueryTests.randomItem($0, &rng) }
        try await storage.save(contentsOf: initial)
        model.clock += 1
        for item in initial { model.rows[item.id] = .init(item: item, updated: model.clock, isExpired: false) }

        for round in 0..<8 {
            // Random updates, deletes and expiries between query rounds.
            for _ in 0..<60 {
                let id = ids.randomElement(using: &rng) ?? ids[0]
                switch Int.random(in: 0..<6, using: &rng) {
                case 0:
                    try await storage.delete(Item.self, id: id)
                    model.rows[id] = nil
                case 1:
                    let item = IndexQueryTests.randomItem(id, &rng)
                    try await storage.save(item, expiration: .date(Date().addingTimeInterval(-10)))
                    model.clock += 1
                    model.rows[id] = .init(item: item, updated: model.clock, isExpired: true)
                case 2:
                    if model.rows[id].map({ !$0.isExpired }) ?? false {
                        try await storage.setExpiration(Item.self, id: id, .date(Date().addingTimeInterval(-1)))
                        model.rows[id]?.isExpired = true
                    }
                default:
                    let item = IndexQueryTests.randomItem(id, &rng)
                    try await storage.save(item, expiration: .hours(1))
                    model.clock += 1
                    model.rows[id] = .init(item: item, updated: model.clock, isExpired: false)
                }
            }
            if round == 4 { _ = try await storage.purgeExpired() }
            for _ in 0..<30 {
                var filters: [StorageIndexFilter] = []
                var conditions: [(String, ReferenceStore.Condition)] = []
                for _ in 0..<Int.random(in: 0...3, using: &rng) {
                    let (filter, index, condition) = IndexQueryTests.randomFilter(&rng)
                    filters.append(filter)
                    conditions.append((index, condition))
                }
                let sortIndex = ["name", "score", "weight", "tag", nil].randomElement(using: &rng) ?? nil
                let sort: StorageIndexSort? = sortIndex.map {
                    Bool.random(using: &rng) ? .ascending($0) : .descending($0)
                }
                let options = FetchOptions(
                    limit: [nil, 0, 1, 5, 20, 200].randomElement(using: &rng) ?? nil,
                    offset: [0, 0, 3, 17].randomElement(using: &rng) ?? 0,
                    sort: [.id, .newestFirst, .oldestFirst].randomElement(using: &rng) ?? .id)
                // The model sorts every match once per order; limits and pages are slices of that.
                let ordered = model.query(conditions, sort: sort, options: FetchOptions(sort: options.sort))
                func slice(_ ids: [String], offset: Int, limit: Int?) -> [String] {
                    Array(ids.dropFirst(offset).prefix(limit ?? Int.max))
                }
                let expected = slice(ordered, offset: options.offset, limit: options.limit)
                let actual = try await storage.fetch(Item.self, matching: filters, orderedBy: sort, options: options)
                #expect(actual.map(\.id) == expected, "filters \(filters) sort \(String(describing: sort)) \(options)")
                for item in actual { #expect(model.rows[item.id]?.item == item) }
                let total = ordered.count
                #expect(try await storage.count(Item.self, matching: filters) == total, "count \(filters)")
                let pageSize = Int.random(in: 1...40, using: &rng)
                let pageNumber = Int.random(in: 1...4, using: &rng)
                let page = try await storage.page(
                    Item.self, matching: filters, orderedBy: sort, page: pageNumber,
                    pageSize: pageSize)
                let pageOrder =
                    sort != nil || options.sort == .id
                    ? ordered : model.query(conditions, sort: sort, options: FetchOptions())
                let pageExpected = slice(pageOrder, offset: (pageNumber - 1) * pageSize, limit: pageSize)
                #expect(page.items.map(\.id) == pageExpected)
                #expect(page.totalCount == total)
            }
        }
    }

    @Test func limitTwentyOverManyRecordsDecodesTwentyAndCountDecodesNone() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        // 20,000: enough that decoding the matches would show (thousands), and a fifth of the test's time at 100,000.
        let products = (0..<20_000).map { Product.sample($0) }
        try await storage.save(contentsOf: products)
        let before = storage.decodeCount
        let rows = try await storage.fetch(
            Product.self, matching: [.atLeast("price", 100.0)],
            orderedBy: .descending("rating"), options: FetchOptions(limit: 20))
        #expect(rows.count == 20)
        #expect(storage.decodeCount - before == 20)
        let afterFetch = storage.decodeCount
        let count = try await storage.count(
            Product.self,
            matching: [
                .equals("category", "books"),
                .between("price", 10...20),
            ])
        #expect(count == products.filter { $0.category == "books" && (10...20).contains($0.price) }.count)
        #expect(storage.decodeCount == afterFetch)
        let page = try await storage.page(
            Product.self, matching: [.atLeast("price", 50.0)],
            orderedBy: .ascending("price"), page: 3, pageSize: 25)
        #expect(page.items.count == 25)
        #expect(storage.decodeCount - afterFetch == 25)
        #expect(page.totalCount == products.filter { $0.price >= 50 }.count)
    }

    @Test func seedQueriesRun() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let now = Date()
        let users = (0..<60).map { n in
            User(
                id: "usr_\(n)", name: "U\(n)", email: n % 4 == 0 ? "ops.\(n)@x.io" : "dev.\(n)@x.io",
                role: [.admin, .editor, .viewer][n % 3], age: 10 + n, lastSeen: now.addingTimeInterval(Double(n)))
        }
        try await storage.save(contentsOf: users)
        let admins = try await storage.fetch(
            User.self, matching: [.equals("role", "admin"), .atLeast("age", 18)],
            orderedBy: .descending("lastSeen"), options: FetchOptions(limit: 20))
        let expected = users.filter { $0.role == .admin && $0.age >= 18 }.sorted { $0.lastSeen > $1.lastSeen }
        #expect(admins.map(\.id) == Array(expected.prefix(20)).map(\.id))
        #expect(try await storage.count(User.self, matching: [.equals("role", "admin")]) == 20)
        let page = try await storage.page(
            User.self, matching: [.between("age", 18...30)],
            orderedBy: .ascending("age"), page: 1, pageSize: 50)
        #expect(page.items.map(\.age) == Array(18...30))
        #expect(page.totalPages == 1 && !page.hasNextPage && !page.hasPreviousPage)
        let staff = try await storage.fetch(
            User.self,
            matching: [
                .hasPrefix("email", "ops."),
                .oneOf("role", ["admin", "editor"]),
            ])
        #expect(
            Set(staff.map(\.id))
                == Set(
                    users.filter {
                        $0.email.hasPrefix("ops.") && $0.role != .viewer
                    }.map(\.id)))
        let repository = storage.repository(User.self)
        #expect(try await repository.count(matching: [.startsWith("email", "dev.")]) == 45)
    }

    @Test func twoDifferentEqualsOnOneIndexMatchNothing() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<30).map { Product.sample($0) })
        let none = try await storage.fetch(
            Product.self,
            matching: [
                .equals("category", "books"),
                .equals("category", "toys"),
            ])
        #expect(none.isEmpty)
        #expect(
            try await storage.count(
                Product.self,
                matching: [
                    .equals("category", "books"),
                    .equals("category", "toys"),
                ]) == 0)
        let narrowed = try await storage.count(Product.self, matching: [.atLeast("price", 5.0), .atMost("price", 10)])
        #expect(narrowed == (0..<30).map { Product.sample($0) }.filter { (5...10).contains($0.price) }.count)
    }

    @Test func recordsWithoutAValueSortFirstAscendingAndLastDescending() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: [
            Item(id: "b", name: nil, score: 1, weight: nil, tag: "t"),
            Item(id: "a", name: "x", score: nil, weight: nil, tag: "t"),
            Item(id: "c", name: nil, score: 0, weight: nil, tag: "t"),
            Item(id: "d", name: "a", score: 2, weight: nil, tag: "t"),
        ])
        let ascending = try await storage.fetch(Item.self, matching: [], orderedBy: .ascending("name"))
        #expect(ascending.map(\.id) == ["b", "c", "d", "a"])
        let descending = try await storage.fetch(Item.self, matching: [], orderedBy: .descending("name"))
        #expect(descending.map(\.id) == ["a", "d", "c", "b"])
        #expect(try await storage.count(Item.self, matching: [.hasPrefix("name", "")]) == 2)
        #expect(try await storage.count(Item.self, matching: [.atLeast("score", Int.min)]) == 3)
    }

    @Test func badQueriesThrowClearErrors() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Product.sample(1))
        await #expect(throws: LocalStorageError.unknownIndex("sku")) {
            try await storage.fetch(Product.self, matching: [.equals("sku", "x")])
        }
        await #expect(throws: LocalStorageError.unknownIndex("nope")) {
            try await storage.fetch(Product.self, matching: [], orderedBy: .ascending("nope"))
        }
        await #expect(throws: LocalStorageError.self) {
            try await storage.fetch(Product.self, matching: [.equals("price", "cheap")])
        }
        await #expect(throws: LocalStorageError.self) {
            try await storage.count(Product.self, matching: [.equals("category", 3)])
        }
        await #expect(throws: LocalStorageError.self) {
            try await storage.fetch(Product.self, matching: [.atLeast("price", Double.nan)])
        }
        await #expect(throws: LocalStorageError.self) {
            try await storage.fetch(Product.self, matching: [.hasPrefix("price", "1")])
        }
        for (page, size) in [(0, 10), (1, 0), (-1, 5)] {
            await #expect(throws: LocalStorageError.self) {
                try await storage.page(Product.self, matching: [], page: page, pageSize: size)
            }
        }
    }

    @Test(arguments: [
        StorageIndexFilter.between("price", 10.0...300.0), .greaterThan("price", 100), .lessThan("price", 77.5),
    ])
    func rangePagesOnTheSortIndexAgreeWithFetchAndCount(filter: StorageIndexFilter) async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<700).map { Product.sample($0) })
        let total = try await storage.count(Product.self, matching: [filter])
        let all = try await storage.fetch(Product.self, matching: [filter], orderedBy: .ascending("price"))
        #expect(all.count == total)
        for number in 1...5 {
            let page = try await storage.page(
                Product.self, matching: [filter], orderedBy: .ascending("price"),
                page: number, pageSize: 40)
            #expect(page.totalCount == total)
            let start = min((number - 1) * 40, all.count)
            #expect(page.items.map(\.id) == all[start..<min(start + 40, all.count)].map(\.id))
        }
    }

    @Test func pagesPastTheEndAndEmptyResults() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<30).map { Product.sample($0) })
        let past = try await storage.page(
            Product.self, matching: [], orderedBy: .ascending("price"), page: 9, pageSize: 10)
        #expect(past.items.isEmpty && past.totalCount == 30 && past.totalPages == 3)
        #expect(!past.hasNextPage && past.hasPreviousPage)
        let huge = try await storage.page(Product.self, matching: [], page: Int.max, pageSize: Int.max)
        #expect(huge.items.isEmpty && huge.totalCount == 30 && huge.totalPages == 1)
        let none = try await storage.page(Product.self, matching: [.equals("category", "none")], page: 1, pageSize: 10)
        #expect(none.items.isEmpty && none.totalPages == 0 && none.totalCount == 0 && !none.hasNextPage)
        let second = try await storage.page(
            Product.self, matching: [], orderedBy: .ascending("price"), page: 2, pageSize: 10)
        #expect(second.hasNextPage && second.hasPreviousPage && second.items.count == 10)
        let all = try await storage.fetch(
            Product.self, matching: [], orderedBy: .ascending("price"),
            options: FetchOptions(limit: Int.max))
        #expect(all.count == 30)
    }

    /// A page built by hand with a page size below 1 (queries refuse one) has no pages rather than trapping.
    @Test func aPageBuiltByHandWithNoPageSizeHasNoPages() {
        for pageSize in [0, -3] {
            let page = StoragePage<Int>(items: [], page: 1, pageSize: pageSize, totalCount: 5)
            #expect(page.totalPages == 0 && !page.hasNextPage && !page.hasPreviousPage)
        }
        #expect(StoragePage<Int>(items: [], page: 2, pageSize: 2, totalCount: 5).totalPages == 3)
        #expect(StoragePage<Int>(items: [], page: 1, pageSize: 2, totalCount: -1).totalPages == 0)
    }
    /// Without an `orderedBy`, `options.sort` decides a page's order as it does a fetch's (API.md), with or
    /// without filters.
    @Test func aPageWithoutAnIndexOrderFollowsTheSortOfItsOptions() async throws {
        let clock = VirtualClock()
        var configuration = diskConfiguration()
        configuration.clock = clock
        try await withStore(configuration) { storage async throws in
            for (position, id) in ["c", "a", "d", "b", "e"].enumerated() {
                try await storage.save(
                    Product(id: id, title: id, category: "books", price: Double(position), rating: 1))
                clock.advance(by: .seconds(1))
            }
            try await storage.save(Product(id: "c", title: "c", category: "books", price: 9, rating: 1))
            for sort in [FetchOptions.Sort.id, .newestFirst, .oldestFirst] {
                for filters in [[], [StorageIndexFilter.equals("category", "books")]] {
                    let options = FetchOptions(sort: sort)
                    let all = try await storage.fetch(Product.self, matching: filters, options: options)
                    var paged: [String] = []
                    for number in 1...3 {
                        let page = try await storage.page(
                            Product.self, matching: filters, page: number, pageSize: 2, options: options)
                        paged += page.items.map(\.id)
                    }
                    #expect(paged == all.map(\.id), "sort \(sort), \(filters.count) filters")
                    // The transactions' page with options orders the same way.
                    let inRead = try await storage.read { tx in
                        try (1...3).flatMap { number in
                            try tx.page(Product.self, matching: filters, page: number, pageSize: 2, options: options)
                                .items.map(\.id)
                        }
                    }
                    let inWrite = try await storage.write { tx in
                        try tx.page(Product.self, matching: filters, page: 1, pageSize: 6, options: options).items
                            .map(\.id)
                    }
                    #expect(inRead == paged, "read, sort \(sort), \(filters.count) filters")
                    #expect(inWrite == paged, "write, sort \(sort), \(filters.count) filters")
                }
            }
            let newest = try await storage.page(
                Product.self, page: 1, pageSize: 2, options: FetchOptions(sort: .newestFirst))
            #expect(newest.items.map(\.id) == ["c", "e"])
        }
    }
}
