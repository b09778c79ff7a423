import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @_spi(Testing) @testable import LocalStorageKit

/// Bulk saves put their sorted entry runs in at the end of a database (`MDB_APPEND`,
/// `MDB_APPENDDUP`, Records/SortedAppend.swift) when they sort after it, and insert them otherwise:
/// random batches that come after, before, between and over the stored ids, all at one update time,
/// against a reference model.
@Suite struct BulkAppendTests {
    struct Item: LocalStorageIndexed, Equatable {
        let id: String
        var rank: Int
        var label: String

        static var storageIndexes: [StorageIndex<Item>] {
            [StorageIndex("rank", \.rank), StorageIndex("label", \.label)]
        }
    }

    /// A batch of distinct ids of one of four shapes, relative to what is stored.
    static func batch(_ random: inout SplitMix64, round: Int) -> [Item] {
        let base: Int
        switch random.below(4) {
        case 0: base = 1000 + round * 40  // after every stored id (appends)
        case 1: base = 0  // over the first ids (replacements, inserts before)
        default: base = random.below(1000 + round * 40)  // between stored ids
        }
        let count = 1 + random.below(30)
        let step = 1 + random.below(3)
        return (0..<count).map { offset in
            Item(
                id: "item-\(100_000 + base + offset * step)",
                rank: random.below(2) == 0 ? 7 : random.below(50),
                label: "l\(random.below(5))")
        }
    }

    /// Sorts `batch` and expects its entries in the memcmp order of (key, id) of `entries`.
    static func expectSortedAsMemcmp(
        _ batch: inout EntryBatch, _ entries: [(key: [UInt8], id: [UInt8])], idsAscending: Bool
    ) {
        let expected = entries.sorted { a, b in
            a.key != b.key ? a.key.lexicographicallyPrecedes(b.key) : a.id.lexicographicallyPrecedes(b.id)
        }
        batch.sort(idsAscending: idsAscending)
        var sorted: [(key: [UInt8], id: [UInt8])] = []
        batch.forEach { key, id in sorted.append((Array(key), Array(id))) }
        #expect(sorted.map(\.key) == expected.map(\.key))
        #expect(sorted.map(\.id) == expected.map(\.id))
    }

    /// The batch's entry sort against memcmp order of (key, id) on random keys of 0–24 bytes drawn from few
    /// byte values (zeros, so that a key and the same key with zeros after it tie on their padded prefix), with
    /// ids in and out of order.
    @Test(arguments: [true, false])
    func entriesSortAsMemcmpOrdersThem(idsAscending: Bool) {
        var random = SplitMix64(seed: idsAscending ? 11 : 12)
        for _ in 0..<20 {
            var batch = EntryBatch(capacity: 300)
            var expected: [(key: [UInt8], id: [UInt8])] = []
            for number in 0..<300 {
                let length = random.below(25)
                let key = (0..<length).map { _ in [0, 0, 1, 0xFF][random.below(4)] as UInt8 }
                let id = Array(
                    String(format: "id%05d", idsAscending ? number : random.below(100_000) * 300 + number).utf8)
                batch.append(key: key, id: id)
                expected.append((key, id))
            }
            Self.expectSortedAsMemcmp(&batch, expected, idsAscending: idsAscending)
        }
    }

    /// The batch writes an index value's key straight into its arena (a bulk save makes no key array per entry):
    /// the same bytes as the key made from the value, for numbers, a missing value and strings with zeros, past
    /// the key's budget and outside ASCII; and a radix-sorted batch of thousands comes out in memcmp order.
    @Test func keysWrittenIntoTheArenaAreTheValuesKeys() {
        var random = SplitMix64(seed: 0xB17C)
        var batch = EntryBatch(capacity: 4_000)
        var expected: [(key: [UInt8], id: [UInt8])] = []
        let pieces = ["a", "\u{0}", "é", "🦊", "zz", "\u{0}\u{0}", String(repeating: "x", count: 97)]
        for number in 0..<4_000 {
            let id = Array(String(format: "id%05d", number).utf8)
            var value: IndexValue?
            switch random.below(3) {
            case 0: value = nil
            case 1: value = .number(.double(Double(random.below(2_000)) - 1_000.5))
            default: value = .string((0..<random.below(12)).map { _ in pieces[random.below(pieces.count)] }.joined())
            }
            let kind: IndexKind = if case .number = value { .number } else { .string }
            let stored = value?.storedBytes
            let key = stored.map { bytes in bytes.withUnsafeBytes { IndexValue.keyBytes(kind: kind, stored: $0) } }
            if let stored {
                stored.withUnsafeBytes { batch.append(kind: kind, stored: $0, id: id) }
            } else {
                batch.append(kind: kind, stored: nil, id: id)
            }
            expected.append((key ?? IndexKeys.missing, id))
        }
        Self.expectSortedAsMemcmp(&batch, expected, idsAscending: true)
    }

    /// Batches in random order that repeat ids, saved directly and inside a transaction (both sort them by id in
    /// place and keep each id's last value): the store holds what a model of "the last value wins" holds.
    @Test func batchesWithRepeatedIdsKeepEachIdsLastValue() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        var random = SplitMix64(seed: 0xD0B1)
        var model: [String: Item] = [:]
        for round in 0..<30 {
            // Labels longer than 16 bytes sharing their first 16 take the entry sort's comparison step (the store
            // takes entries in any order, so the tests of the sort above check its order; this one, the results).
            let batch = (0..<(1 + random.below(300))).map { _ in
                Item(
                    id: "i\(random.below(150))", rank: random.below(9),
                    label: "a-label-longer-than-16-bytes-\(random.below(4))")
            }
            if round % 2 == 0 {
                try await storage.save(contentsOf: batch)
            } else {
                try await storage.write { transaction in try transaction.save(contentsOf: batch) }
            }
            for item in batch { model[item.id] = item }
            let all = try await storage.fetch(Item.self, options: FetchOptions(limit: 1_000))
            #expect(all == model.values.sorted { Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8)) })
            let label = "a-label-longer-than-16-bytes-1"
            let ones = try await storage.count(Item.self, matching: [.equals("label", label)])
            #expect(ones == model.values.filter { $0.label == label }.count, "round \(round)")
            // The index's order: by label, then id.
            let byLabel = try await storage.fetch(
                Item.self, matching: [], orderedBy: .descending("label"), options: FetchOptions(limit: 1_000))
            let expected = model.values.sorted {
                $0.label != $1.label
                    ? $0.label > $1.label : Array($0.id.utf8).lexicographicallyPrecedes(Array($1.id.utf8)) == false
            }
            #expect(byLabel.map(\.id) == expected.map(\.id), "round \(round)")
        }
    }

    /// A batch large enough to be encoded by several child tasks (`prepareAll`: twice `preparationChunk` values and
    /// up, on two or more processors) keeps each id's last value too: the chunks come back in their order
    /// (review-72 #3).
    @Test func aBatchEncodedInChunksKeepsEachIdsLastValue() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        var random = SplitMix64(seed: 0xD0B2)
        let batch = (0..<6_000).map { n in Item(id: "i\(random.below(2_000))", rank: n, label: "l\(random.below(7))") }
        #expect(batch.count >= 4 * LocalStorage.preparationChunk)
        try await storage.save(contentsOf: batch)
        var model: [String: Item] = [:]
        for item in batch { model[item.id] = item }
        let all = try await storage.fetch(Item.self, options: FetchOptions(limit: 10_000))
        #expect(all.count == model.count)
        let wrong = all.filter { model[$0.id] != $0 }.map(\.id)
        #expect(wrong.isEmpty, "\(wrong.count) ids hold another value than their last, e.g. \(wrong.prefix(3))")
        for label in (0..<7).map({ "l\($0)" }) {
            let counted = try await storage.count(Item.self, matching: [.equals("label", label)])
            #expect(counted == model.values.filter { $0.label == label }.count, "\(label)")
        }
    }

    @Test func randomBatchesAtOneUpdateTimeMatchAModel() async throws {
        var configuration = diskConfiguration()
        configuration.clock = VirtualClock()  // never advanced: every batch has the same update-time key
        let storage = try LocalStorage(configuration: configuration)
        var random = SplitMix64(seed: 0xA99E)
        var model: [String: Item] = [:]
        for round in 0..<40 {
            let items = Self.batch(&random, round: round)
            try await storage.save(contentsOf: items)
            for item in items { model[item.id] = item }
            let stored = try await storage.fetch(Item.self)
            #expect(stored == model.values.sorted { $0.id < $1.id })
            let rank = random.below(50)
            let byRank = try await storage.fetch(
                Item.self, matching: [.between("rank", rank...(rank + 5))], orderedBy: .ascending("rank"))
            let expected = model.values.filter { (rank...(rank + 5)).contains($0.rank) }
                .sorted { ($0.rank, $0.id) < ($1.rank, $1.id) }
            #expect(byRank.map(\.id) == expected.map(\.id))
            let label = "l\(random.below(5))"
            #expect(
                try await storage.count(Item.self, matching: [.equals("label", label)])
                    == model.values.filter { $0.label == label }.count)
        }
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        let report = try maintenance.verify()
        #expect(report.isClean, "\(report.problems)")
    }

    /// Batches whose ids grow go into the records database at the end, filling its pages; the same batches
    /// saved newest first split pages in half. (Each store ends with the same records: only the layout
    /// differs.)
    @Test func growingIdsFillTheRecordPages() async throws {
        func recordPages(newestFirst: Bool) async throws -> (pages: Int, records: Int) {
            let storage = try LocalStorage(configuration: diskConfiguration())
            let batches = (0..<20).map { batch in
                (0..<250).map { offset in
                    Item(id: "item-\(100_000 + batch * 250 + offset)", rank: offset % 50, label: "l\(batch % 5)")
                }
            }
            for items in newestFirst ? batches.reversed() : batches { try await storage.save(contentsOf: items) }
            #expect(try await storage.fetch(Item.self).map(\.id) == batches.joined().map(\.id))
            let figures = try await StoreMaintenance(directory: storage.core.directory).statistics()
            let records = try #require(figures.databases.first { $0.name == "Item/records" })
            return (records.pages, records.entries)
        }
        let growing = try await recordPages(newestFirst: false)
        let shrinking = try await recordPages(newestFirst: true)
        #expect(growing.records == 5000 && shrinking.records == 5000)
        // Appended pages are full; split ones about half full (LMDB splits a page in the middle).
        #expect(Double(growing.pages) < 0.75 * Double(shrinking.pages), "\(growing.pages) vs \(shrinking.pages)")
    }
}
