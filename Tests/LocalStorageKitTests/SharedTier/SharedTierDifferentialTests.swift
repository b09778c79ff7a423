import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// A record with string, number and optional indexes, for random queries.
struct Gadget: LocalStorageIndexed, Equatable {
    let id: String
    var name: String
    var score: Double
    var rank: Int?
    var tag: String?

    static var storageIndexes: [StorageIndex<Gadget>] {
        [
            StorageIndex("name", \.name), StorageIndex("score", \.score), StorageIndex("rank", \.rank),
            StorageIndex("tag", \.tag),
        ]
    }
}

/// Shared-scope queries against local ones, on random data with a fixed seed: the same rows, counts and pages.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierDifferentialTests {
    @Test func sharedQueriesMatchLocalOnesOnRandomData() async throws {
        var random = SplitMix64(seed: 17)
        let storage = try await sharedStore(SharedTestServer.configuration())
        let names = ["", "a", "ab", "abc", "b", "ba", "é", "z\u{0}z", "zz"]
        let tags = ["red", "green", "blue"]
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        var gadgets: [Gadget] = []
        for n in 0..<240 {
            gadgets.append(
                Gadget(
                    id: String(format: "g%03d", (n * 37) % 240), name: pick(names),
                    score: Double(Int(random.next() % 40)) / 4 - 3,
                    rank: random.next() % 4 == 0 ? nil : Int(random.next() % 20) - 5,
                    tag: random.next() % 3 == 0 ? nil : pick(tags)))
        }
        try await storage.save(contentsOf: gadgets[0..<200], expiration: .hours(1))
        for gadget in gadgets[200..<220] { try await storage.save(gadget) }
        // Already expired when written: invisible to both.
        try await storage.save(contentsOf: gadgets[220...], expiration: .date(Date(timeIntervalSinceNow: -1)))
        // Saved again: some with new index values (the server's sets drop the old members), some as they were.
        for position in stride(from: 0, to: 220, by: 3) {
            var gadget = gadgets[position]
            if random.next() % 2 == 0 {
                gadget.name = pick(names)
                gadget.score = Double(Int(random.next() % 40)) / 4 - 3
                gadget.rank = random.next() % 4 == 0 ? nil : Int(random.next() % 20) - 5
                gadget.tag = random.next() % 3 == 0 ? nil : pick(tags)
            }
            gadgets[position] = gadget
            try await storage.save(gadget, expiration: .hours(1))
        }

        func filter() -> StorageIndexFilter {
            switch random.next() % 9 {
            case 0: .equals("name", pick(names))
            case 1: .hasPrefix("name", pick(["", "a", "b", "z"]))
            case 2: .atLeast("score", Double(Int(random.next() % 20)) / 2 - 3)
            case 3: .lessThan("score", Int(random.next() % 8) - 2)
            case 4: .between("rank", -2...Int(random.next() % 10))
            case 5: .greaterThan("rank", Int(random.next() % 10) - 3)
            case 6: .oneOf("tag", [pick(tags), pick(tags)])
            case 7: .atMost("name", pick(names))
            default: .equals("rank", Int(random.next() % 20) - 5)
            }
        }
        let sortNames = ["name", "score", "rank", "tag"]
        for round in 0..<120 {
            let filters = (0..<Int(random.next() % 3)).map { _ in filter() }
            let sort: StorageIndexSort? =
                switch random.next() % 3 {
                case 0: nil
                case 1: .ascending(pick(sortNames))
                default: .descending(pick(sortNames))
                }
            let order: FetchOptions.Sort = pick([.id, .newestFirst, .oldestFirst])
            let limit: Int? = random.next() % 3 == 0 ? nil : Int(random.next() % 30)
            let offset = Int(random.next() % 20)
            let local = FetchOptions(limit: limit, offset: offset, sort: order)
            var shared = local
            shared.scope = .shared
            let described =
                "round \(round): \(filters) \(String(describing: sort)) \(order) limit \(String(describing: limit)) offset \(offset)"
            let expected = try await storage.fetch(Gadget.self, matching: filters, orderedBy: sort, options: local)
            let actual = try await storage.fetch(Gadget.self, matching: filters, orderedBy: sort, options: shared)
            #expect(actual.map(\.id) == expected.map(\.id), "\(described)")
            #expect(actual == expected, "\(described)")
            let localCount = try await storage.count(Gadget.self, matching: filters)
            #expect(
                try await storage.count(Gadget.self, matching: filters, options: shared) == localCount,
                "\(described)")
            let page = 1 + Int(random.next() % 3)
            let localPage = try await storage.page(
                Gadget.self, matching: filters, orderedBy: sort, page: page,
                pageSize: 7)
            let sharedPage = try await storage.page(
                Gadget.self, matching: filters, orderedBy: sort, page: page,
                pageSize: 7, options: FetchOptions(scope: .shared))
            #expect(sharedPage.items.map(\.id) == localPage.items.map(\.id), "\(described) page \(page)")
            #expect(sharedPage.totalCount == localPage.totalCount, "\(described) page \(page)")
        }
        // A listing without conditions, in each order.
        for order in [FetchOptions.Sort.id, .newestFirst, .oldestFirst] {
            let expected = try await storage.fetch(Gadget.self, options: FetchOptions(sort: order))
            let actual = try await storage.fetch(Gadget.self, options: FetchOptions(sort: order, scope: .shared))
            #expect(actual.map(\.id) == expected.map(\.id), "\(order)")
            #expect(actual.count == 220)
        }
    }

    /// Queries whose walks read the server's sorted sets in several chunks (of 512 members): each chunk starts
    /// past the last member of the one before, in both directions.
    @Test func sharedQueriesOverSeveralChunksMatchLocalOnes() async throws {
        var random = SplitMix64(seed: 23)
        let storage = try await sharedStore(SharedTestServer.configuration())
        var gadgets: [Gadget] = []
        for n in 0..<1_300 {
            let score = Double(random.below(200)) / 4
            let rank: Int? = n % 5 == 0 ? nil : Int(random.below(50))
            let name = ["a", "b", "c"][n % 3]
            gadgets.append(
                Gadget(id: String(format: "c%04d", (n * 7) % 1_300), name: name, score: score, rank: rank, tag: nil))
        }
        try await storage.save(contentsOf: gadgets)
        let queries: [([StorageIndexFilter], StorageIndexSort?)] = [
            ([], nil), ([], .ascending("score")), ([], .descending("score")), ([], .descending("name")),
            ([.between("score", 1.0...45.0)], nil), ([.atLeast("rank", 3)], .descending("score")),
            ([.equals("name", "b"), .atMost("score", 40.0)], .ascending("rank")),
        ]
        for (filters, sort) in queries {
            for order in [FetchOptions.Sort.id, .newestFirst, .oldestFirst] {
                let expected = try await storage.fetch(
                    Gadget.self, matching: filters, orderedBy: sort, options: FetchOptions(sort: order))
                let actual = try await storage.fetch(
                    Gadget.self, matching: filters, orderedBy: sort, options: FetchOptions(sort: order, scope: .shared))
                #expect(actual.map(\.id) == expected.map(\.id), "\(filters) \(String(describing: sort)) \(order)")
            }
        }
        #expect(try await storage.fetch(Gadget.self, options: FetchOptions(scope: .shared)).count == 1_300)
    }
}
