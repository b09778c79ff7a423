import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// `StorageEvictionPolicy.adaptive` (Records/AdaptiveEviction.swift) against its reference model
/// (`AdaptiveCacheModel`), and its guarantees: scan resistance, exact limits, byte limits, per-type limits,
/// query reads as uses, two processes on one store.
@Suite struct AdaptiveEvictionTests {
    typealias Tile = BoundedCacheTests.Tile
    typealias Thumb = BoundedCacheTests.Thumb

    static func configuration(
        _ limits: StorageLimits?, directory: URL = temporaryDirectory()
    )
        -> LocalStorageConfiguration
    {
        BoundedCacheTests.configuration(limits, policy: .adaptive, directory: directory)
    }

    /// The ids of `universe` the store holds, read without counting as uses (metadata is not a read).
    static func held(_ universe: [String], _ storage: LocalStorage) async throws -> Set<String> {
        var held: Set<String> = []
        for id in universe where try await storage.metadata(Tile.self, id: id) != nil { held.insert(id) }
        return held
    }

    @Test func isTheDefault() {
        #expect(LocalStorageConfiguration().evictionPolicy == .adaptive)
    }

    /// Zipf traces through a store of 40 records and through the model hold the same records, and the
    /// sketch is kept in rows.
    @Test(arguments: [UInt64(1), 2, 3])
    func matchesTheReferenceModelStepByStep(seed: UInt64) async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: 40)))
        try await Self.replay(seed: seed, through: storage, and: AdaptiveCacheModel(capacity: 40, type: 1))
        #expect(try Self.hasDatabase(FrequencySketch.Layout.rows.databaseName, storage))
        #expect(try !Self.hasDatabase(FrequencySketch.Layout.blocks.databaseName, storage))
    }

    /// A store whose sketch was made before rows (`adaptive.sketch.size` in `meta`: one block an entry, a
    /// block a record, halved every 5 × blocks uses) keeps that shape and layout; the model given that
    /// shape matches it step by step (with a new store's shape it does not).
    @Test func aSketchMadeBeforeRowsKeepsItsShape() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: 40)))
        var size: [UInt8] = []
        size.appendBigEndian(UInt64(64))
        let meta = storage.core.meta
        try await storage.core.writer.perform { context in
            try context.txn.put(meta, key: FrequencySketch.blockLayoutSizeKey.bytes, value: size)
        }
        let model = AdaptiveCacheModel(capacity: 40, type: 1, sketch: (blocks: 64, halvingPeriod: 320))
        try await Self.replay(seed: 4, through: storage, and: model)
        #expect(try Self.hasDatabase(FrequencySketch.Layout.blocks.databaseName, storage))
        #expect(try !Self.hasDatabase(FrequencySketch.Layout.rows.databaseName, storage))
    }

    /// The window's size is kept in quarters of the records the policy first ran with (`adaptive.capacity`), so
    /// a process whose registered limits differ (another largest limit) reads it alike.
    @Test func theWindowIsReckonedOnTheFirstCapacity() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: 400)))
        try await storage.save(Tile(id: "a", weight: 1))
        let meta = storage.core.meta
        let quarters = try await storage.core.writer.perform { context in
            try AdaptiveEviction(
                txn: context.txn, meta: meta, capacity: 100_000, carried: nil, records: { _ in nil }
            ).windowQuarters
        }
        // 1% of 400 records in quarters is 16; of 100,000 it would be 4,000.
        #expect(quarters == 16)
    }

    /// Clearing a type takes its records out of the ghost lists too: its ids coming back are new records, and
    /// the other type's ghosts stay.
    @Test func clearingATypeForgetsItsGhosts() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: 20)))
        for round in 0..<3 {
            for index in 0..<30 {
                try await storage.save(Tile(id: "t\(round)-\(index)", weight: 1))
                try await storage.save(Thumb(id: "h\(round)-\(index)", size: 1))
            }
        }
        func ghosts() throws -> (tiles: Int, thumbs: Int) {
            try storage.core.environment.read { txn in
                guard let byRecord = try txn.openDatabase(AdaptiveGhosts.byRecordName, create: false) else {
                    return (0, 0)
                }
                var counts = (tiles: 0, thumbs: 0)
                try txn.withCursor(byRecord) { cursor in
                    var entry = try cursor.move(.first)
                    while let current = entry {
                        let type = UInt32(bigEndian: current.key.loadUnaligned(as: UInt32.self))
                        if type == 1 { counts.tiles += 1 } else { counts.thumbs += 1 }
                        entry = try cursor.move(.next)
                    }
                }
                return counts
            }
        }
        let before = try ghosts()
        #expect(before.tiles > 0 && before.thumbs > 0)
        try await storage.deleteAll(Tile.self)
        try await storage.save(Thumb(id: "after", size: 1))
        let after = try ghosts()
        #expect(after.tiles == 0)
        #expect(after.thumbs > 0)
    }

    /// A record limit far above what the byte limit lets the store hold: the ghost lists stay near the size of
    /// what the store holds, instead of growing by two entries with every eviction up to a quarter of
    /// `maxRecords` each.
    /// A type's own limits of the same shape, with no store limits.
    struct WideTile: LocalStorable {
        let id: String
        var weight: Int
        var blob: String
        static var storageLimits: StorageLimits? { StorageLimits(maxRecords: 10_000_000, maxBytes: 100_000) }
    }

    @Test(arguments: [true, false]) func ghostListsStayNearWhatTheStoreHolds(storeWide: Bool) async throws {
        let limits = storeWide ? StorageLimits(maxRecords: 10_000_000, maxBytes: 100_000) : nil
        let storage = try LocalStorage(configuration: Self.configuration(limits))
        let blob = String(repeating: "x", count: 1_000)
        for index in 0..<1_500 {
            if storeWide {
                try await storage.save(Tile(id: "t\(index)", weight: index, blob: blob))
            } else {
                try await storage.save(WideTile(id: "t\(index)", weight: index, blob: blob))
            }
        }
        let held = storeWide ? try await storage.count(Tile.self) : try await storage.count(WideTile.self)
        #expect(held < 110)
        let ghosts = try storage.core.environment.read { txn in
            try txn.openDatabase(AdaptiveGhosts.byRecordName, create: false).map { try txn.entryCount($0) } ?? 0
        }
        #expect(ghosts > 0)
        #expect(ghosts <= 2 * max(AdaptiveGhosts.fewestKept, held / 4), "\(ghosts) ghosts beside \(held) records")
    }

    /// Whether LMDB's main database names `name` (a database was made).
    static func hasDatabase(_ name: String, _ storage: LocalStorage) throws -> Bool {
        try storage.core.environment.read { txn in try txn.get(.main, key: Array(name.utf8)) != nil }
    }

    /// Replays a Zipf trace of fetches (a miss saves, sometimes a batch) through a store of 40 records and
    /// through `model`: after every fifth commit both hold the same records.
    static func replay(seed: UInt64, through storage: LocalStorage, and model: AdaptiveCacheModel) async throws {
        let universe = (0..<160).map { "k\($0)" }
        let trace = ZipfTrace(keys: universe.count, exponent: 0.9, length: 1_500, seed: seed).keys
        var random = SplitMix64(seed: seed)
        var commits = 0
        for key in trace {
            let id = universe[key]
            if try await storage.fetch(Tile.self, id: id) != nil {
                #expect(model.contains(id), "the store holds \(id), the model does not")
                model.read(id)
                continue
            }
            #expect(!model.contains(id), "the model holds \(id), the store does not")
            var batch = [id]
            if random.below(8) == 0 {
                batch += (0..<(1 + random.below(4))).map { _ in universe[random.below(universe.count)] }
            }
            let unique = Array(Set(batch)).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            if unique.count == 1 {
                try await storage.save(Tile(id: id, weight: 1))
            } else {
                try await storage.save(contentsOf: unique.map { Tile(id: $0, weight: 1) })
            }
            model.commit(writing: unique)
            commits += 1
            if commits % 5 == 0 {
                let held = try await Self.held(universe, storage)
                try #require(held == model.residents, "after commit \(commits)")
            }
        }
        #expect(try await Self.held(universe, storage) == model.residents)
    }

    /// A loop a little longer than the cache (48 ids over 40 records, each request a fetch and a miss a save)
    /// keeps most of the loop, as W-TinyLFU does, and the store matches the model step by step. The window grew
    /// for every turned-away record that came back a loop later, which no window could have kept: it reached
    /// half the store, and the store missed 53% of the requests (25% now).
    @Test func aLoopALittleLongerThanTheCacheKeepsMostOfIt() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: 40)))
        let model = AdaptiveCacheModel(capacity: 40, type: 1)
        let loop = (0..<48).map { "k\($0)" }
        var misses = 0
        for request in 0..<1_200 {
            let id = loop[request % loop.count]
            if try await storage.fetch(Tile.self, id: id) != nil {
                model.read(id)
                continue
            }
            misses += 1
            try await storage.save(Tile(id: id, weight: request))
            model.commit(writing: [id])
            if request % 7 == 0 { try #require(try await Self.held(loop, storage) == model.residents) }
        }
        #expect(try await Self.held(loop, storage) == model.residents)
        #expect(misses <= 360, "\(misses) misses in 1,200 requests")
    }

    /// A hot set read again and again survives a one-pass scan of 2,000 one-time records through a store of
    /// 100 (under `.leastRecentlyUsed` the scan flushes it).
    @Test func aScanDoesNotFlushTheHotSet() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: 100)))
        let hot = (0..<60).map { "hot\($0)" }
        for round in 0..<4 {
            for id in hot where try await storage.fetch(Tile.self, id: id) == nil {
                try await storage.save(Tile(id: id, weight: round))
            }
        }
        for id in hot { _ = try await storage.fetch(Tile.self, id: id) }
        for n in 0..<2_000 {
            try await storage.save(Tile(id: "scan\(n)", weight: n))
            #expect(try await storage.count(Tile.self) <= 100)
        }
        let kept = try await Self.held(hot, storage)
        #expect(kept.count >= 55, "the scan flushed \(60 - kept.count) of 60 hot records")
    }

    /// Reads through a query count as uses: records only queried survive a scan as fetched ones do.
    @Test func aQueryReadCountsAsAUse() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: 100)))
        let hot = (0..<60).map { "hot\($0)" }
        try await storage.save(contentsOf: hot.map { Tile(id: $0, weight: 1) })
        for _ in 0..<4 { _ = try await storage.fetch(Tile.self, options: FetchOptions(limit: 60)) }
        for n in 0..<1_000 { try await storage.save(Tile(id: "scan\(n)", weight: n)) }
        let kept = try await Self.held(hot, storage)
        #expect(kept.count >= 55, "the scan flushed \(60 - kept.count) of 60 queried records")
    }

    /// A batch that writes the records in use again with as many records the store had evicted keeps the ones in use
    /// (read three times, written twice) and evicts the others (written twice, never read), as every other policy does:
    /// among a commit's own records the window's candidates went unweighed, and probation's reused records were
    /// evicted before the window's new ones (trial103 D1).
    @Test(arguments: [10, 100])
    func aBatchRewritingTheRecordsInUseKeepsThem(limit: Int) async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: limit)))
        let ids = (0..<(2 * limit)).map { "k" + String(repeating: "0", count: 4 - String($0).count) + String($0) }
        let batch = ids.map { Tile(id: $0, weight: 1) }
        try await storage.save(contentsOf: batch)
        let inUse = Array(ids.suffix(limit))  // batches age in id order: the last ids stay
        #expect(try await Self.held(ids, storage) == Set(inUse))
        for _ in 0..<3 { for id in inUse { _ = try await storage.fetch(Tile.self, id: id) } }
        try await storage.save(contentsOf: batch)
        let kept = try await Self.held(ids, storage)
        #expect(kept == Set(inUse), "evicted \(Set(inUse).subtracting(kept).sorted().prefix(5)) of those in use")
    }

    /// 10,000 saves (single and batched, new and repeated ids, with reads between) into a store of at most
    /// 1,000 records: after every commit the store holds at most 1,000, including every record the commit wrote.
    @Test func aRecordLimitHoldsAfterEveryCommit() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: 1_000)))
        var random = SplitMix64(seed: 10_000)
        var saved = 0
        while saved < 10_000 {
            let batch = (0..<(1 + random.below(30))).map { _ in "t\(random.below(4_000))" }
            let unique = Array(Set(batch))
            try await storage.save(contentsOf: unique.map { Tile(id: $0, weight: 1) })
            saved += unique.count
            if random.below(2) == 0 { _ = try await storage.fetch(Tile.self, id: "t\(random.below(4_000))") }
            #expect(try await storage.count(Tile.self) <= 1_000)
            for id in unique.prefix(3) { #expect(try await storage.metadata(Tile.self, id: id) != nil) }
        }
        #expect(try await storage.count(Tile.self) == 1_000)
        #expect(try await storage.statistics().evictions > 0)
    }

    /// Records of mixed sizes under a byte limit: after every commit the payload bytes are within it and the
    /// record just saved is there.
    @Test func aByteLimitHoldsWithMixedSizes() async throws {
        let maxBytes = 40_000
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxBytes: maxBytes)))
        var random = SplitMix64(seed: 77)
        for n in 0..<600 {
            let id = "m\(random.below(300))"
            try await storage.save(
                Tile(id: id, weight: n, blob: String(repeating: "x", count: 10 + random.below(2_000))))
            if random.below(3) == 0 { _ = try await storage.fetch(Tile.self, id: "m\(random.below(300))") }
            let statistics = try await storage.statistics()
            #expect(statistics.payloadBytes <= maxBytes)
            #expect(try await storage.metadata(Tile.self, id: id) != nil)
        }
    }

    /// A type's own limit and the store's hold together after every commit.
    @Test func perTypeLimitsBesideStoreLimits() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(StorageLimits(maxRecords: 150)))
        var random = SplitMix64(seed: 150)
        for n in 0..<1_200 {
            if random.below(2) == 0 {
                try await storage.save(Thumb(id: "th\(random.below(400))", size: n))
            } else {
                try await storage.save(Tile(id: "ti\(random.below(400))", weight: n))
            }
            let thumbs = try await storage.count(Thumb.self)
            let tiles = try await storage.count(Tile.self)
            #expect(thumbs <= 100)
            #expect(thumbs + tiles <= 150)
        }
    }

    /// Another process reads a hot set (its reads reach the store in its own next commit) and writes; this
    /// process then scans: the hot set survives, and the limit holds after every commit of either.
    @Test func twoProcessesShareOneBoundedStore() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(
            configuration: Self.configuration(StorageLimits(maxRecords: 100), directory: directory))
        let helper = try HelperProcess(["bounded", directory.path, "100"], withInput: true)
        try await helper.waitForLine("ready") { $0 == "ready" }
        let hot = (0..<50).map { "hot\($0)" }
        try await storage.save(contentsOf: hot.map { StressRecord.make(id: $0, sequence: 0) })
        for round in 0..<3 {
            for id in hot {
                let reply = try await helper.ask("fetch \(id) 2")
                try #require(reply == "hit" || reply == "miss", "\(reply)")
                if reply == "miss" { _ = try await helper.ask("save \(id)") }
            }
            let reply = try await helper.ask("save other\(round)")
            try #require(reply.hasPrefix("ok "), "\(reply)")
            #expect((Int(reply.dropFirst(3)) ?? .max) <= 100)
        }
        for n in 0..<400 {
            try await storage.save(StressRecord.make(id: "scan\(n)", sequence: n))
            #expect(try await storage.count(StressRecord.self) <= 100)
            if n % 50 == 0 {
                let reply = try await helper.ask("save mixed\(n)")
                #expect((Int(reply.dropFirst(3)) ?? .max) <= 100, "\(reply)")
            }
        }
        var kept = 0
        for id in hot where try await storage.metadata(StressRecord.self, id: id) != nil { kept += 1 }
        #expect(kept >= 45, "the scan flushed \(50 - kept) of 50 records the other process reads")
        helper.closeInput()
        await helper.waitForExit()
    }
}

/// Ids of up to 511 bytes (the most LMDB's keys hold) under every policy that tracks use: the recency
/// indexes key a record by its type number and id, four bytes more than the id.
@Suite struct LongIDUnderLimitsTests {
    typealias Tile = BoundedCacheTests.Tile

    @Test(arguments: [StorageEvictionPolicy.adaptive, .leastRecentlyUsed])
    func longestIDsAreSavedReadAndEvicted(policy: StorageEvictionPolicy) async throws {
        let storage = try LocalStorage(
            configuration: BoundedCacheTests.configuration(StorageLimits(maxRecords: 3), policy: policy))
        let long = (0..<6).map { String(repeating: "\($0)", count: 511 - $0 % 2) }
        for id in long.prefix(3) { try await storage.save(Tile(id: id, weight: 1)) }
        // Reads are folded at the next commit, then each save evicts one record.
        for id in long.prefix(3) { #expect(try await storage.fetch(Tile.self, id: id)?.id == id) }
        for id in long.dropFirst(3) { try await storage.save(Tile(id: id, weight: 2)) }
        try await storage.save(Tile(id: "short", weight: 3))
        #expect(try await BoundedCacheTests.ids(Tile.self, storage).count == 3)
        #expect(try await storage.fetch(Tile.self, id: "short")?.weight == 3)
        try await storage.save(Tile(id: "after", weight: 5))
        #expect(try await storage.fetch(Tile.self, id: "after")?.weight == 5)
        // Loading through the cache takes a lease keyed by type and id.
        let loaded = String(repeating: "L", count: 510)
        let value = try await storage.fetch(Tile.self, id: loaded) { id in Tile(id: id, weight: 6) }
        #expect(value?.weight == 6)
        #expect(try await storage.fetch(Tile.self, id: loaded)?.weight == 6)
        #expect(try await BoundedCacheTests.ids(Tile.self, storage).count == 3)
    }
}
