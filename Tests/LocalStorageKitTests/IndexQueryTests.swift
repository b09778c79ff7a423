import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// A record with optional values on every kind of index, for the differential test.
struct Item: LocalStorageIndexed, Equatable {
    let id: String
    var name: String?
    var score: Int?
    var weight: Double?
    var tag: String

    static var storageIndexes: [StorageIndex<Item>] {
        [
            .string("name") { $0.name },
            .number("score") { $0.score },
            .number("weight") { $0.weight },
            StorageIndex("tag", \.tag),
        ]
    }
}

/// The plain in-memory model the store is compared against.
struct ReferenceStore {
    struct Row {
        var item: Item
        var updated: Int
        var isExpired: Bool
    }

    var rows: [String: Row] = [:]
    var clock = 0

    enum Value: Equatable {
        case string([UInt8])
        case number(Double)

        static func < (a: Value, b: Value) -> Bool {
            switch (a, b) {
            case (.string(let x), .string(let y)): return x.lexicographicallyPrecedes(y)
            case (.number(let x), .number(let y)): return x < y
            default: return false
            }
        }
    }

    static func value(_ item: Item, _ index: String) -> Value? {
        switch index {
        case "name": item.name.map { .string(Array($0.utf8)) }
        case "score": item.score.map { .number(Double($0)) }
        case "weight": item.weight.map { .number($0) }
        default: .string(Array(item.tag.utf8))
        }
    }

    enum Condition {
        case equals(Value)
        case atLeast(Value)
        case atMost(Value)
        case greaterThan(Value)
        case lessThan(Value)
        case between(Value, Value)
        case oneOf([Value])
        case prefix([UInt8])

        func matches(_ value: Value) -> Bool {
            switch self {
            case .equals(let v): value == v
            case .atLeast(let v): !(value < v)
            case .atMost(let v): !(v < value)
            case .greaterThan(let v): v < value
            case .lessThan(let v): value < v
            case .between(let a, let b): !(value < a) && !(b < value)
            case .oneOf(let values): values.contains(value)
            case .prefix(let p): if case .string(let s) = value { s.starts(with: p) } else { false }
            }
        }
    }

    func query(_ conditions: [(String, Condition)], sort: StorageIndexSort?, options: FetchOptions) -> [String] {
        let live = rows.values.filter { row in
            !row.isExpired
                && conditions.allSatisfy { index, condition in
                    ReferenceStore.value(row.item, index).map(condition.matches) ?? false
                }
        }
        func idLess(_ a: Row, _ b: Row) -> Bool { a.item.id.utf8.lexicographicallyPrecedes(b.item.id.utf8) }
        let ascending: (Row, Row) -> Bool
        var descending = false
        if let sort {
            let name = sort.indexName
            descending = sort.isDescending
            // Each row's sort value once, not once per comparison.
            let values = Dictionary(
                uniqueKeysWithValues: live.map {
                    ($0.item.id, ReferenceStore.value($0.item, name))
                })
            ascending = { a, b in
                switch (values[a.item.id] ?? nil, values[b.item.id] ?? nil) {
                case (nil, nil): return idLess(a, b)
                case (nil, _): return true
                case (_, nil): return false
                case (let x?, let y?): return x == y ? idLess(a, b) : x < y
                }
            }
        } else {
            switch options.sort {
            case .id: ascending = idLess
            case .newestFirst, .oldestFirst:
                descending = options.sort == .newestFirst
                ascending = { a, b in a.updated == b.updated ? idLess(a, b) : a.updated < b.updated }
            }
        }
        let sorted = live.sorted { descending ? ascending($1, $0) : ascending($0, $1) }.map(\.item.id)
        let start = min(options.offset, sorted.count)
        let end = min(options.end, sorted.count)
        return start < end ? Array(sorted[start..<end]) : []
    }
}

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
        let products = (0..<100_000).map { Product.sample($0) }
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

    @Test func exactNumbersAcrossTypesAndBeyondDoublePrecision() async throws {
        struct Big: LocalStorageIndexed {
            let id: String
            var value: Int64
            static var storageIndexes: [StorageIndex<Big>] { [StorageIndex("value", \.value)] }
        }
        let storage = try LocalStorage(configuration: .inMemory)
        let base: Int64 = 1 << 53
        try await storage.save(contentsOf: (0..<5).map { Big(id: "b\($0)", value: base + Int64($0)) })
        #expect(try await storage.fetch(Big.self, matching: [.equals("value", base + 1)]).map(\.id) == ["b1"])
        #expect(try await storage.count(Big.self, matching: [.greaterThan("value", UInt64(base) + 2)]) == 2)
        #expect(try await storage.count(Big.self, matching: [.atLeast("value", Double(base))]) == 5)
        let descending = try await storage.fetch(Big.self, matching: [], orderedBy: .descending("value"))
        #expect(descending.map(\.id) == ["b4", "b3", "b2", "b1", "b0"])
    }

    @Test func longStringValuesStayExact() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let shared = String(repeating: "p", count: 500)
        let items = ["z", "a", "m"].enumerated().map { n, tail in
            Item(id: "l\(n)", name: shared + tail, score: nil, weight: nil, tag: "t")
        }
        try await storage.save(contentsOf: items)
        #expect(try await storage.fetch(Item.self, matching: [.equals("name", shared + "m")]).map(\.id) == ["l2"])
        #expect(try await storage.count(Item.self, matching: [.greaterThan("name", shared + "a")]) == 2)
        let sorted = try await storage.fetch(Item.self, matching: [], orderedBy: .ascending("name"))
        #expect(sorted.map(\.id) == ["l1", "l2", "l0"])
        let reversed = try await storage.fetch(Item.self, matching: [], orderedBy: .descending("name"))
        #expect(reversed.map(\.id) == ["l0", "l2", "l1"])
        #expect(try await storage.count(Item.self, matching: [.hasPrefix("name", shared + "z")]) == 1)
    }

    @Test func sixteenIndexesPerType() async throws {
        struct Wide: LocalStorageIndexed {
            let id: String
            var values: [Int]
            static var storageIndexes: [StorageIndex<Wide>] {
                (0..<20).map { n in .number("v\(n)") { $0.values[n] } }
            }
        }
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<10).map { k in Wide(id: "w\(k)", values: (0..<20).map { $0 * k }) })
        for n in [0, 7, 15, 19] {
            #expect(try await storage.count(Wide.self, matching: [.atLeast("v\(n)", n * 5)]) == (n == 0 ? 10 : 5))
        }
    }

    @Test func changedDeclarationReindexesOnFirstQuery() async throws {
        struct V1: LocalStorageIndexed {
            static var storageName: String { "Shape" }
            let id: String
            var side: Int
            var color: String
            static var storageIndexes: [StorageIndex<V1>] { [.number("side") { $0.side }] }
        }
        struct V2: LocalStorageIndexed {
            static var storageName: String { "Shape" }
            let id: String
            var side: Int
            var color: String
            static var storageIndexes: [StorageIndex<V2>] {
                [.string("color") { $0.color }, .number("area") { $0.side * $0.side }]
            }
        }
        let directory = temporaryDirectory()
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            try await storage.save(
                contentsOf: (1...2500).map { V1(id: "s\($0)", side: $0 % 10, color: $0 % 2 == 0 ? "red" : "blue") })
            #expect(try await storage.count(V1.self, matching: [.equals("side", 3)]) == 250)
        }
        let reopened = try LocalStorage(configuration: diskConfiguration(directory))
        #expect(try await reopened.count(V2.self, matching: [.equals("color", "red")]) == 1250)
        #expect(try await reopened.count(V2.self, matching: [.atLeast("area", 49)]) == 750)
        await #expect(throws: LocalStorageError.unknownIndex("side")) {
            try await reopened.count(V2.self, matching: [.equals("side", 3)])
        }
        let top = try await reopened.fetch(
            V2.self, matching: [.equals("color", "blue")], orderedBy: .descending("area"),
            options: FetchOptions(limit: 3))
        #expect(top.allSatisfy { $0.side == 9 && $0.color == "blue" })
    }
}
