import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @_spi(Testing) @testable import LocalStorageKit

/// A type keeps its update order (`u.<type#>`, an entry per record) only once something asks for it (``UpdateOrder``):
/// until then a query sorted by update time sorts the headers, the first such query builds it, and every write after
/// keeps it. Checked against a model on random writes, expirations and deletes, before and after.
@Suite struct UpdateOrderTests {
    typealias Gauge = CountTreeTests.Gauge

    /// What the model knows of a record: the commit that last wrote it (the writer gives each commit a later time
    /// than the one before, also when the clock stands still, and every record of a batch the same) and its expiry in
    /// the clock's nanoseconds (0: none).
    struct Held {
        var commit: Int
        var expiresAt: Int64
    }

    /// Random saves (single and batches, some at one time, some expiring) and deletes at moving virtual times.
    static func write(
        _ count: Int, into storage: LocalStorage, model: inout [String: Held], clock: VirtualClock,
        random: inout SplitMix64
    ) async throws {
        for _ in 0..<count {
            // A step no small multiple of which comes within milliseconds of an expiry; now and then none.
            if random.below(4) != 0 { clock.advance(by: .nanoseconds(271_828_183)) }
            let now = clock.wallNanoseconds()
            let commit = (model.values.map(\.commit).max() ?? 0) + 1
            switch random.below(10) {
            case 0..<2:
                let ids = Set((0..<(1 + random.below(20))).map { _ in "g\(random.below(300))" }).sorted()
                try await storage.save(
                    contentsOf: ids.map { Gauge(id: $0, reading: Double(random.below(50)), label: "b") })
                for id in ids { model[id] = Held(commit: commit, expiresAt: 0) }
            case 2..<4:
                let id = "g\(random.below(300))"
                try await storage.save(Gauge(id: id, reading: nil, label: "d"))
                try await storage.delete(Gauge.self, id: id)
                model[id] = nil
            case 4:
                let id = "g\(random.below(300))"
                let seconds = 1 + random.below(3)
                try await storage.save(
                    Gauge(id: id, reading: 1, label: "e"), expiration: .seconds(TimeInterval(seconds)))
                model[id] = Held(commit: commit, expiresAt: now + Int64(seconds) * 1_000_000_000)
            default:
                let id = "g\(random.below(300))"
                try await storage.save(Gauge(id: id, reading: Double(random.below(50)), label: "s"))
                model[id] = Held(commit: commit, expiresAt: 0)
            }
        }
    }

    /// The live ids in the model's update order: by commit, then by id (newest first reverses both).
    static func expected(_ model: [String: Held], now: Int64, newestFirst: Bool) -> [String] {
        let live = model.filter { $0.value.expiresAt == 0 || $0.value.expiresAt > now }
        let ascending = live.sorted { a, b in
            a.value.commit != b.value.commit
                ? a.value.commit < b.value.commit : Array(a.key.utf8).lexicographicallyPrecedes(Array(b.key.utf8))
        }.map(\.key)
        return newestFirst ? ascending.reversed() : ascending
    }

    /// Every read sorted by update time against the model: listings and a query with a condition, through a
    /// synchronous read transaction (which never builds the order) and, with `asynchronous`, through the store.
    static func check(
        _ storage: LocalStorage, model: [String: Held], clock: VirtualClock, random: inout SplitMix64,
        asynchronous: Bool
    ) async throws {
        let now = clock.wallNanoseconds()
        for sort in [FetchOptions.Sort.newestFirst, .oldestFirst] {
            let all = expected(model, now: now, newestFirst: sort == .newestFirst)
            let (offset, limit) = (random.below(20), 1 + random.below(60))
            let page = Array(all.dropFirst(offset).prefix(limit))
            let options = FetchOptions(limit: limit, offset: offset, sort: sort)
            let inTransaction = try await storage.read { try $0.fetch(Gauge.self, options: options) }
            #expect(inTransaction.map { $0.id } == page, "\(sort) in a read transaction")
            // A condition every record meets: the query's plan walks the order too.
            let matching = try await storage.read { transaction in
                try transaction.fetch(Gauge.self, matching: [.greaterThan("label", "a")], options: options)
            }
            #expect(matching.map { $0.id } == page, "\(sort) matching, in a read transaction")
            guard asynchronous else { continue }
            #expect(try await storage.fetch(Gauge.self, options: options).map { $0.id } == page, "\(sort)")
            let queried = try await storage.fetch(Gauge.self, matching: [.greaterThan("label", "a")], options: options)
            #expect(queried.map { $0.id } == page, "\(sort) matching")
        }
    }

    static func updateEntries(_ storage: LocalStorage) async throws -> Int {
        let schema = try await storage.core.schema(for: Gauge.self)
        return try storage.core.environment.read { txn in try txn.entryCount(schema.updated) }
    }

    static func records(_ storage: LocalStorage) async throws -> Int {
        let schema = try await storage.core.schema(for: Gauge.self)
        return try storage.core.environment.read { txn in try txn.entryCount(schema.records) }
    }

    @Test func theOrderIsBuiltByTheFirstQuerySortedByUpdateTimeAndKeptAfter() async throws {
        let clock = VirtualClock()
        var configuration = diskConfiguration()
        configuration.clock = clock
        configuration.expirySweepInterval = nil
        let storage = try LocalStorage(configuration: configuration)
        var random = SplitMix64(seed: 0x0DE7)
        var model: [String: Held] = [:]

        try await Self.write(200, into: storage, model: &model, clock: clock, random: &random)
        #expect(try await Self.updateEntries(storage) == 0, "no entry before anything asks for the order")
        for _ in 0..<3 {
            try await Self.check(storage, model: model, clock: clock, random: &random, asynchronous: false)
        }
        #expect(try await Self.updateEntries(storage) == 0, "a read transaction sorts the headers, it builds nothing")

        try await Self.check(storage, model: model, clock: clock, random: &random, asynchronous: true)
        // Expired records not purged yet are in the order too, as every record is.
        #expect(try await Self.updateEntries(storage) == (try await Self.records(storage)))

        for _ in 0..<4 {
            try await Self.write(60, into: storage, model: &model, clock: clock, random: &random)
            try await Self.check(storage, model: model, clock: clock, random: &random, asynchronous: true)
            #expect(try await Self.updateEntries(storage) == (try await Self.records(storage)))
        }
        #expect(try await verifyProblems(storage) == [])
    }

    /// A query whose plan never walks the order (an equality on a selective index, sorted by its records' headers)
    /// builds none (review-102 #4: issue 26's own query shape built the order for good).
    @Test func aQueryThatSortsAnIndexsFewMatchesBuildsNoOrder() async throws {
        let clock = VirtualClock()
        var configuration = diskConfiguration()
        configuration.clock = clock
        let storage = try LocalStorage(configuration: configuration)
        var random = SplitMix64(seed: 0x0DE6)
        var model: [String: Held] = [:]
        try await Self.write(300, into: storage, model: &model, clock: clock, random: &random)
        try await storage.save(contentsOf: (0..<500).map { Gauge(id: "z\($0)", reading: 0, label: "many") })
        let singles = model.filter { $0.value.expiresAt == 0 }
        let rows = try await storage.fetch(
            Gauge.self, matching: [.equals("label", "s")], options: FetchOptions(sort: .newestFirst))
        let labelled = try await storage.read { transaction in
            try transaction.fetch(Gauge.self, matching: [.equals("label", "s")], options: FetchOptions())
        }
        let expected = Self.expected(
            singles.filter { id, _ in labelled.contains { $0.id == id } }, now: clock.wallNanoseconds(),
            newestFirst: true)
        #expect(rows.map { $0.id } == expected)
        #expect(try await Self.updateEntries(storage) == 0)
    }

    /// A store of layout 5 kept every type's order: opened by this version it stays at 5 (a version of layout 5 still
    /// opens it), its types keep their orders, and the first new type an app registers raises it to 6 and starts
    /// without one.
    @Test func aLayoutFiveStoreKeepsItsTypesOrdersAndNewTypesStartWithout() async throws {
        let directory = temporaryDirectory()
        let clock = VirtualClock()
        var configuration = diskConfiguration(directory)
        configuration.clock = clock
        configuration.expirySweepInterval = nil
        var random = SplitMix64(seed: 0x0DE5)
        var model: [String: Held] = [:]
        try await withStore(configuration) { storage async throws in
            try await Self.write(120, into: storage, model: &model, clock: clock, random: &random)
            try await OlderLayouts.make(storage, layout: 5)
        }
        try await withStore(configuration) { storage async throws in
            #expect(try CountTreeTests.layout(storage) == "5")
            #expect(try await Self.updateEntries(storage) == (try await Self.records(storage)))
            try await Self.write(60, into: storage, model: &model, clock: clock, random: &random)
            #expect(try await Self.updateEntries(storage) == (try await Self.records(storage)))
            try await Self.check(storage, model: model, clock: clock, random: &random, asynchronous: false)
            try await storage.save(Note(id: "n1", text: "new"))
            #expect(try CountTreeTests.layout(storage) == "\(TypeRegistry.layout)")
            let notes = try await storage.core.schema(for: Note.self)
            #expect(try storage.core.environment.read { txn in try txn.entryCount(notes.updated) } == 0)
            #expect(try await verifyProblems(storage) == [])
        }
    }

    /// A new type registered while another process has a store of layout 5 open (it may be a version of layout 5,
    /// which would go on writing the type's update-time entries and miss its records in a sort: trial100 D1) keeps its
    /// order, and the store stays at 5; registered once the store is alone, the next new type raises it to 6 and
    /// starts without one. `stats` says which types keep none.
    @Test func aStoreOfLayoutFiveIsRaisedOnlyWhileNoOtherProcessHasItOpen() async throws {
        let directory = temporaryDirectory()
        let configuration = diskConfiguration(directory)
        try await withStore(configuration) { storage async throws in
            try await storage.save(contentsOf: (0..<20).map { Gauge(id: "g\($0)", reading: Double($0), label: "l") })
            try await OlderLayouts.make(storage, layout: 5)
        }
        let holder = try HelperProcess([
            "hold-lock", configuration.storeDirectory.appendingPathComponent("lock.mdb").path,
        ])
        try await holder.waitForLine("locked") { $0 == "locked" }
        try await withStore(configuration) { storage async throws in
            try await storage.save(Note(id: "n1", text: "with another process"))
            #expect(try CountTreeTests.layout(storage) == "5")
            let notes = try await storage.core.schema(for: Note.self)
            #expect(try storage.core.environment.read { txn in try txn.entryCount(notes.updated) } == 1)
        }
        await holder.kill()
        try await withStore(configuration) { storage async throws in
            try await storage.save(BoundedCacheTests.Tile(id: "t1", weight: 1))
            #expect(try CountTreeTests.layout(storage) == "\(TypeRegistry.layout)")
            let tiles = try await storage.core.schema(for: BoundedCacheTests.Tile.self)
            #expect(try storage.core.environment.read { txn in try txn.entryCount(tiles.updated) } == 0)
            try await storage.save(Note(id: "n2", text: "alone"))
            let notes = try await storage.core.schema(for: Note.self)
            #expect(try storage.core.environment.read { txn in try txn.entryCount(notes.updated) } == 2)
            let statistics = try await StoreMaintenance(directory: storage.core.directory).statistics()
            #expect(statistics.layout == TypeRegistry.layout)
            let types = statistics.types
            let keeping = Dictionary(uniqueKeysWithValues: types.map { ($0.name, $0.keepsUpdateOrder) })
            #expect(keeping == ["Gauge": true, "Note": true, "Tile": false], "\(keeping)")
            #expect(try await verifyProblems(storage) == [])
        }
    }

    /// A type whose evictions take the least recently updated records keeps its order from its registration (built in
    /// a commit of its own, not in a save that evicts); under the least recently used policy it keeps none until a
    /// walk needs it (review-103 #1).
    @Test(arguments: [StorageEvictionPolicy.leastRecentlyUpdated, .soonestExpiring, .leastRecentlyUsed])
    func aTypeWhoseEvictionsWalkTheOrderKeepsItFromItsRegistration(policy: StorageEvictionPolicy) async throws {
        var configuration = diskConfiguration()
        configuration.limits = StorageLimits(maxRecords: 50)
        configuration.evictionPolicy = policy
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(contentsOf: (0..<30).map { Gauge(id: "g\($0)", reading: 1, label: "l") })
        let kept = policy != .leastRecentlyUsed
        #expect(try await Self.updateEntries(storage) == (kept ? 30 : 0))
        try await storage.save(contentsOf: (30..<80).map { Gauge(id: "g\($0)", reading: 1, label: "l") })
        #expect(try await storage.count(Gauge.self) == 50)
        #expect(try await verifyProblems(storage) == [])
    }
}
