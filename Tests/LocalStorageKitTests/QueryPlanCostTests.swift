import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// Plans chosen by cost: an indexed filter never walks the whole type, whatever the number of matches,
/// and the rows are those of the reference model (sorted by id without an index order).
@Suite struct QueryPlanCostTests {
    struct Reading: LocalStorageIndexed, Equatable {
        let id: String
        var n: Int
        var name: String

        static var storageIndexes: [StorageIndex<Reading>] {
            [StorageIndex("n", \.n), StorageIndex("name", \.name)]
        }
    }

    static let size = 20_000

    /// Ids in a shuffled order relative to `n`, so that id order and index order differ.
    static func make() -> [Reading] {
        var random = SplitMix64(seed: 21)
        return (0..<size).map { i in
            Reading(id: "r\(random.below(1_000_000))-\(i)", n: i, name: "name\(i % 10)")
        }
    }

    @Test func indexedFiltersVisitAboutTheirMatchesNotTheType() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let all = Self.make()
        for start in stride(from: 0, to: all.count, by: 5_000) {
            try await storage.save(contentsOf: all[start..<start + 5_000])
        }
        let runtime = try await storage.core.schema(for: Reading.self).runtime
        func byID(_ rows: [Reading]) -> [String] {
            rows.map(\.id).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
        func visits(_ body: () async throws -> [Reading]) async throws -> (ids: [String], visited: Int) {
            let before = runtime.entriesVisited.load(ordering: .relaxed)
            let rows = try await body()
            return (rows.map(\.id), runtime.entriesVisited.load(ordering: .relaxed) - before)
        }
        // Around the old cliff (999 and 1,000 matches) and past it: about one visit per match.
        for width in [999, 1_000, 1_001, 3_000] {
            let range = 8_000...(8_000 + width - 1)
            let expected = byID(all.filter { range.contains($0.n) })
            let whole = try await visits { try await storage.fetch(Reading.self, matching: [.between("n", range)]) }
            #expect(whole.ids == expected, "between \(range)")
            #expect(whole.visited <= 2 * width + 10, "between \(range) visited \(whole.visited)")
            let first = try await visits {
                try await storage.fetch(
                    Reading.self, matching: [.between("n", range)], options: FetchOptions(limit: 20, offset: 5))
            }
            #expect(first.ids == Array(expected.dropFirst(5).prefix(20)), "between \(range) limit 20")
            #expect(first.visited <= 2 * width + 10, "between \(range) limit 20 visited \(first.visited)")
        }
        // An equality matching a tenth of the type, with and without a limit.
        let named = byID(all.filter { $0.name == "name5" })
        let equal = try await visits { try await storage.fetch(Reading.self, matching: [.equals("name", "name5")]) }
        #expect(equal.ids == named && equal.visited <= named.count + 10, "equals visited \(equal.visited)")
        let page = try await visits {
            try await storage.fetch(
                Reading.self, matching: [.equals("name", "name5")], options: FetchOptions(limit: 20, offset: 40))
        }
        #expect(page.ids == Array(named[40..<60]) && page.visited <= 100, "equals limit visited \(page.visited)")
        // Two filters: the narrower drives, whichever it is. An equality's candidates are its key's duplicates,
        // counted with one seek a value: each bound below fails when an equality's count is taken as none, as one
        // value's for several, or as the whole index.
        let both = try await visits {
            try await storage.fetch(Reading.self, matching: [.equals("name", "name3"), .atLeast("n", 19_500)])
        }
        #expect(both.ids == byID(all.filter { $0.name == "name3" && $0.n >= 19_500 }))
        #expect(both.visited <= 500 + 10, "two filters (the range narrower) visited \(both.visited)")
        let equalityNarrower = try await visits {
            try await storage.fetch(Reading.self, matching: [.equals("name", "name3"), .atLeast("n", 10_000)])
        }
        #expect(equalityNarrower.ids == byID(all.filter { $0.name == "name3" && $0.n >= 10_000 }))
        #expect(equalityNarrower.visited <= 2_000 + 10, "equality narrower visited \(equalityNarrower.visited)")
        let several = try await visits {
            try await storage.fetch(
                Reading.self, matching: [.oneOf("name", ["name1", "name2"]), .atLeast("n", 17_000)])
        }
        #expect(several.ids == byID(all.filter { ["name1", "name2"].contains($0.name) && $0.n >= 17_000 }))
        #expect(several.visited <= 3_000 + 10, "oneOf wider visited \(several.visited)")
        // Newest first still comes in update order, from the matches alone.
        let newest = try await visits {
            try await storage.fetch(
                Reading.self, matching: [.between("n", 100...199)], options: FetchOptions(sort: .newestFirst))
        }
        #expect(Set(newest.ids) == Set(all[100...199].map(\.id)) && newest.visited <= 210)
    }
}
