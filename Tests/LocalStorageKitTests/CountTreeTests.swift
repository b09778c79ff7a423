import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @_spi(Benchmarks) @_spi(Testing) @testable import LocalStorageKit

/// The count tree (Records/CountTree.swift) against a reference model: counts and pages of random
/// queries after random saves, replacements, deletes, expiries and aborted transactions.
@Suite struct CountTreeTests {
    struct Gauge: LocalStorageIndexed, Equatable {
        let id: String
        var reading: Double?
        var label: String

        static var storageIndexes: [StorageIndex<Gauge>] {
            [StorageIndex("reading", \.reading), StorageIndex("label", \.label)]
        }
    }

    struct Aborted: Error {}

    /// Readings with many duplicates, both signs, tiny and huge magnitudes and integers, so keys share
    /// prefixes at every level of the tree.
    static func reading(_ random: inout SplitMix64) -> Double? {
        switch random.below(8) {
        case 0: return nil
        case 1: return Double(random.below(21) - 10)
        case 2: return Double(random.below(2_000_001)) / 1000 - 1000
        case 3: return Double(random.below(100)) * 1e-300
        case 4: return Double(random.below(100)) * 1e300
        case 5: return Double(random.below(1 << 20)) + 0.25
        case 6: return -Double(random.below(1 << 20)) - 0.5
        default: return Double(random.below(1000)) / 8
        }
    }

    /// Labels with long common prefixes, `\0`, and values longer than the key budget (cut keys).
    static func label(_ random: inout SplitMix64) -> String {
        switch random.below(5) {
        case 0: return "item-\(String(random.below(300)).leftPadded(to: 4))"
        case 1: return String(repeating: "x", count: 395 + random.below(10)) + String(random.below(20))
        case 2: return "a\u{0}" + String(random.below(50))
        case 3: return ""
        default: return String(UnicodeScalar(UInt8(97 + random.below(26)))) + String(random.below(1000))
        }
    }

    static func bound(_ random: inout SplitMix64, _ model: [String: Gauge]) -> Double {
        // Bounds often sit exactly on stored values.
        if random.below(2) == 0, let value = model.values.randomElement(using: &random)?.reading { return value }
        return reading(&random) ?? 0
    }

    @Test func countsAndPagesMatchAReferenceModel() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        var random = SplitMix64(seed: 0xC0_4E7)
        var model: [String: Gauge] = [:]
        func gauge() -> Gauge {
            Gauge(id: "g\(random.below(400))", reading: Self.reading(&random), label: Self.label(&random))
        }
        for step in 0..<160 {
            switch random.below(6) {
            case 0, 1:
                var batch: [String: Gauge] = [:]
                for _ in 0..<(1 + random.below(60)) {
                    let value = gauge()
                    batch[value.id] = value
                }
                try await storage.save(contentsOf: Array(batch.values))
                model.merge(batch) { $1 }
            case 2:
                let value = gauge()
                try await storage.save(value)
                model[value.id] = value
            case 3:
                let id = "g\(random.below(400))"
                try await storage.delete(Gauge.self, id: id)
                model[id] = nil
            case 4:
                let value = gauge()
                try await storage.save(value, expiration: .date(Date().addingTimeInterval(-5)))
                model[value.id] = nil
            default:
                let value = gauge()
                let victim = "g\(random.below(400))"
                await #expect(throws: Aborted.self) {
                    try await storage.write { tx in
                        try tx.save(value)
                        try tx.delete(Gauge.self, id: victim)
                        throw Aborted()
                    }
                }
            }
            for _ in 0..<6 { try await checkCount(storage, model, &random, step: step) }
            try await checkPage(storage, model, &random, step: step)
        }
    }

    private func checkCount(
        _ storage: LocalStorage, _ model: [String: Gauge], _ random: inout SplitMix64,
        step: Int
    ) async throws {
        let low = Self.bound(&random, model)
        let high = Self.bound(&random, model)
        let (filter, test): (StorageIndexFilter, (Gauge) -> Bool)
        switch random.below(8) {
        case 0: (filter, test) = (.atLeast("reading", low), { $0.reading.map { $0 >= low } ?? false })
        case 1: (filter, test) = (.greaterThan("reading", low), { $0.reading.map { $0 > low } ?? false })
        case 2: (filter, test) = (.atMost("reading", low), { $0.reading.map { $0 <= low } ?? false })
        case 3: (filter, test) = (.lessThan("reading", low), { $0.reading.map { $0 < low } ?? false })
        case 4:
            let range = min(low, high)...max(low, high)
            (filter, test) = (.between("reading", range), { $0.reading.map(range.contains) ?? false })
        case 5:
            let prefix = String(Self.label(&random).prefix(random.below(6)))
            (filter, test) = (.hasPrefix("label", prefix), { $0.label.utf8.starts(with: prefix.utf8) })
        case 6:
            let a = Self.label(&random)
            let b = Self.label(&random)
            let range = min(a, b)...max(a, b)
            (filter, test) = (.between("label", range), { range.contains($0.label) })
        default:
            let a = Self.label(&random)
            (filter, test) = (.lessThan("label", a), { $0.label < a })
        }
        let expected = model.values.filter(test).count
        let counted = try await storage.count(Gauge.self, matching: [filter])
        #expect(counted == expected, "step \(step): count of \(filter)")
    }

    private func checkPage(
        _ storage: LocalStorage, _ model: [String: Gauge], _ random: inout SplitMix64,
        step: Int
    ) async throws {
        let low = Self.bound(&random, model)
        let high = Self.bound(&random, model)
        let range = min(low, high)...max(low, high)
        // Index order: by value, then by id bytes.
        let matching = model.values.filter { $0.reading.map(range.contains) ?? false }.sorted { a, b in
            let (x, y) = (a.reading ?? 0, b.reading ?? 0)
            return x != y ? x < y : a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }
        let pageSize = 1 + random.below(12)
        let pageNumber = 1 + random.below(max(1, matching.count / pageSize + 2))
        // Descending: the index's order reversed, ids of one value too (pages jump through the count tree both ways).
        let descending = random.below(2) == 0
        let page = try await storage.page(
            Gauge.self, matching: [.between("reading", range)],
            orderedBy: descending ? .descending("reading") : .ascending("reading"), page: pageNumber,
            pageSize: pageSize)
        let ordered = descending ? Array(matching.reversed()) : matching
        let start = min(ordered.count, (pageNumber - 1) * pageSize)
        let expected = ordered[start..<min(ordered.count, start + pageSize)].map(\.id)
        #expect(page.totalCount == matching.count, "step \(step): total of \(range)")
        #expect(
            page.items.map(\.id) == expected,
            "step \(step): page \(pageNumber) × \(pageSize) of \(range)\(descending ? ", descending" : "")")
    }

    /// A range count from the level where its two bounds' groups part equals a walk of the index's entries, for
    /// random bounds: equal, in one deepest group, parting at each level, far apart (the two ranks then), and
    /// keys that end within the levels.
    @Test func aCountFromWhereTheBoundsPartEqualsAWalkOfTheEntries() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        var random = SplitMix64(seed: 0xD1_7E5)
        try await storage.save(
            contentsOf: (0..<800).map {
                Gauge(id: "g\($0)", reading: Self.reading(&random), label: Self.label(&random))
            })
        let schema = try await storage.core.schema(for: Gauge.self)
        let counts = try #require(schema.counts)
        try storage.core.environment.read { txn in
            for index in schema.indexes {
                var keys: [(key: [UInt8], entries: Int)] = []
                try txn.withCursor(index.dbi) { cursor in
                    var entry = try cursor.move(.first)
                    while let current = entry {
                        keys.append((Array(current.key), try cursor.duplicateCount()))
                        entry = try cursor.move(.nextKey)
                    }
                }
                func bound(near position: Int) -> [UInt8] {
                    var key = keys[min(keys.count - 1, max(0, position))].key
                    switch random.below(5) {
                    case 0: return key
                    case 1: return key + [0]
                    case 2:
                        // Another byte at any depth: the bounds then part at that level.
                        let at = random.below(key.count)
                        key[at] = key[at] &+ (random.below(2) == 0 ? 1 : 255)
                        return key
                    case 3: return Array(key.prefix(1 + random.below(key.count)))
                    default: return key + [UInt8(random.below(256))]
                    }
                }
                var sameDeepest = 0
                let levels = CountTree.levels(of: index.kind)
                var partingAt = Array(repeating: 0, count: levels.count)
                for _ in 0..<600 {
                    let first = random.below(keys.count)
                    let lower = bound(near: first)
                    let upper = bound(near: random.below(3) == 0 ? random.below(keys.count) : first + random.below(4))
                    let expected = keys.filter {
                        !$0.key.lexicographicallyPrecedes(lower) && $0.key.lexicographicallyPrecedes(upper)
                    }.reduce(0) { $0 + $1.entries }
                    let counted = try CountTree.count(from: lower, below: upper, index: index, counts: counts, txn: txn)
                    #expect(counted == expected, "\(index.name): [\(lower), \(upper))")
                    if let deepest = levels.last, lower.count > deepest, upper.count > deepest {
                        if let parting = levels.firstIndex(where: { lower.prefix($0) != upper.prefix($0) }) {
                            partingAt[parting] += 1
                        } else {
                            sameDeepest += 1
                        }
                    }
                }
                #expect(sameDeepest > 0, "\(index.name): no pair of bounds in one deepest group")
                if index.kind == .number {
                    #expect(!partingAt.contains(0), "\(index.name): bounds parting at each level \(partingAt)")
                }
            }
        }
    }

    /// Single range and prefix counts and number-range page totals come from the tree; combined filters
    /// walk, and still count exactly.
    @Test func thePlanSaysWhichCountsUseTheTree() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(
            contentsOf: (0..<500).map { Gauge(id: "g\($0)", reading: Double($0), label: "l\($0 % 7)") })
        let runtime = try await storage.core.schema(for: Gauge.self).runtime
        func tally() -> (tree: Int, walk: Int) {
            (runtime.countsFromTree.load(ordering: .relaxed), runtime.countsByWalking.load(ordering: .relaxed))
        }
        #expect(try await storage.count(Gauge.self, matching: [.between("reading", 100.0...399.0)]) == 300)
        #expect(try await storage.count(Gauge.self, matching: [.hasPrefix("label", "l3")]) == 71)
        let page = try await storage.page(
            Gauge.self, matching: [.atLeast("reading", 450.0)],
            orderedBy: .ascending("reading"), page: 2, pageSize: 20)
        #expect(page.totalCount == 50 && page.items.map(\.id) == (470..<490).map { "g\($0)" })
        #expect(tally() == (3, 0))
        let combined = try await storage.count(
            Gauge.self, matching: [.atLeast("reading", 100.0), .equals("label", "l3")])
        #expect(combined == (100..<500).filter { $0 % 7 == 3 }.count)
        #expect(tally() == (3, 1))
    }

    /// A range ordered by its own index walks that order without asking the count tree, and a page of a
    /// number range ranks its first entry once: the total and the jump to the page share it.
    @Test func queriesWalkTheCountTreeOnlyAsOftenAsTheyNeed() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(
            contentsOf: (0..<500).map { Gauge(id: "g\($0)", reading: Double($0), label: "l\($0 % 7)") })
        let runtime = try await storage.core.schema(for: Gauge.self).runtime
        func walks() -> Int { runtime.treeWalks.load(ordering: .relaxed) }
        let ranged = try await storage.fetch(
            Gauge.self, matching: [.between("reading", 100.0...399.0)], orderedBy: .ascending("reading"),
            options: FetchOptions(limit: 20))
        #expect(ranged.map(\.id) == (100..<120).map { "g\($0)" })
        #expect(walks() == 0)
        let page = try await storage.page(
            Gauge.self, matching: [.between("reading", 100.0...399.0)], orderedBy: .ascending("reading"),
            page: 3, pageSize: 20)
        #expect(page.totalCount == 300 && page.items.map(\.id) == (140..<160).map { "g\($0)" })
        #expect(walks() == 3)
        // A condition on another index may make collecting cheaper than walking the order: both are estimated.
        let combined = try await storage.fetch(
            Gauge.self, matching: [.between("reading", 100.0...399.0), .equals("label", "l3")],
            orderedBy: .ascending("reading"), options: FetchOptions(limit: 5))
        #expect(combined.map(\.id) == [101, 108, 115, 122, 129].map { "g\($0)" })
        #expect(walks() > 3)
    }

    /// The counters a store keeps after random writes are exactly those a rebuild from the entries gives.
    @Test func keptCountersEqualARebuild() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        var random = SplitMix64(seed: 77)
        for _ in 0..<40 {
            let batch = (0..<(1 + random.below(40))).map { _ in
                Gauge(id: "g\(random.below(200))", reading: Self.reading(&random), label: Self.label(&random))
            }
            try await storage.save(contentsOf: Dictionary(batch.map { ($0.id, $0) }) { $1 }.map(\.value))
            try await storage.delete(Gauge.self, id: "g\(random.below(200))")
            if let one = batch.first { try await storage.save(Gauge(id: one.id, reading: nil, label: "z")) }
        }
        let schema = try await storage.core.schema(for: Gauge.self)
        let counts = try #require(schema.counts)
        let (kept, rebuilt) = try await storage.core.writer.perform { context in
            let kept = try Self.counters(counts, context.txn)
            for index in schema.allIndexes { try CountTree.rebuild(index, counts: counts, txn: context.txn) }
            return (kept, try Self.counters(counts, context.txn))
        }
        #expect(!kept.isEmpty)
        #expect(kept == rebuilt)
    }

    static func counters(_ counts: Database, _ txn: Transaction) throws -> [[UInt8]: [UInt8]] {
        var all: [[UInt8]: [UInt8]] = [:]
        try txn.withCursor(counts) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry {
                all[Array(current.key)] = Array(current.value)
                entry = try cursor.move(.next)
            }
        }
        return all
    }

    /// `verify` compares every counter with the entries it counts; `repair` rebuilds.
    @Test func verifyFindsAndRepairFixesWrongCounts() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(
            contentsOf: (0..<200).map { Gauge(id: "g\($0)", reading: Double($0 % 37), label: "l\($0)") })
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        #expect(try maintenance.verify().isClean)
        let schema = try await storage.core.schema(for: Gauge.self)
        let index = try #require(schema.index(named: "label"))
        let counts = try #require(schema.counts)
        try await storage.core.writer.perform { context in
            try CountTree.add(
                3, toCounter: index.counterPrefix + [1, UInt8(ascii: "l")], counts: counts,
                txn: context.txn)
        }
        let report = try maintenance.verify()
        #expect(report.problems.map(\.kind) == [.wrongCount], "\(report.problems)")
        let repaired = try await maintenance.repair()
        #expect(repaired.isClean, "\(repaired.problems)")
        #expect(try await storage.count(Gauge.self, matching: [.hasPrefix("label", "l1")]) == 111)
    }

    /// A store of layout 2 (no count tree) gets its tree built when it is opened for writing.
    @Test func anOlderLayoutGetsItsCountTreeWhenOpened() async throws {
        let directory = temporaryDirectory()
        let gauges = (0..<300).map { Gauge(id: "g\($0)", reading: Double($0 % 97), label: "l\($0 % 13)") }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(contentsOf: gauges)
            try await OlderLayouts.make(storage, layout: 2)
        }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try Self.layout(storage) == "\(TypeRegistry.declarationCountsLayout)")
            let expected = gauges.filter { ($0.reading ?? 0) >= 40 }.count
            #expect(try await storage.count(Gauge.self, matching: [.atLeast("reading", 40.0)]) == expected)
            let prefixed = gauges.filter { $0.label.hasPrefix("l1") }.count
            #expect(try await storage.count(Gauge.self, matching: [.hasPrefix("label", "l1")]) == prefixed)
            #expect(try await StoreMaintenance(directory: storage.core.directory).verify().isClean)
        }
    }
}

extension CountTreeTests {
    /// The layout marker of the store `storage` has open.
    static func layout(_ storage: LocalStorage) throws -> String? {
        try storage.core.environment.read { txn in
            try txn.get(storage.core.meta, key: TypeRegistry.layoutKey).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// A store of layout 2 that another process has open (an app extension still on 0.1.0, which writes without a
    /// count tree) is not upgraded: the upgrade built the tree, the other process's writes then left it wrong, and
    /// counts and pages came out wrong with no error (/work/trial60.md). It stays at layout 2, counting by walking,
    /// until an open finds it alone.
    @Test func anOlderLayoutThatAnotherProcessHasOpenIsNotUpgraded() async throws {
        let directory = temporaryDirectory()
        let gauges = (0..<300).map { Gauge(id: "g\($0)", reading: Double($0 % 97), label: "l\($0 % 13)") }
        var withoutTree = diskConfiguration(directory)
        withoutTree.withoutCountTree = true
        try await withStore(withoutTree) { storage async throws in
            try await storage.save(contentsOf: gauges)
            let meta = storage.core.meta
            try await storage.core.writer.perform { context in
                try OlderLayouts.keepEveryUpdateOrder(meta: meta, context: context)
                try context.txn.put(meta, key: TypeRegistry.layoutKey, value: Array("2".utf8))
            }
        }
        let holder = try HelperProcess([
            "hold-lock", withoutTree.storeDirectory.appendingPathComponent("lock.mdb").path,
        ])
        try await holder.waitForLine("locked") { $0 == "locked" }
        let expected = gauges.filter { ($0.reading ?? 0) >= 40 }.count
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try Self.layout(storage) == "2")
            #expect(try await storage.core.schema(for: Gauge.self).counts == nil)
            #expect(try await storage.count(Gauge.self, matching: [.atLeast("reading", 40.0)]) == expected)
            try await storage.save(Gauge(id: "new", reading: 50, label: "l1"))
            #expect(try await storage.count(Gauge.self, matching: [.atLeast("reading", 40.0)]) == expected + 1)
        }
        await holder.kill()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try Self.layout(storage) == "\(TypeRegistry.declarationCountsLayout)")
            #expect(try await storage.core.schema(for: Gauge.self).counts != nil)
            #expect(try await storage.count(Gauge.self, matching: [.atLeast("reading", 40.0)]) == expected + 1)
        }
    }
}

extension CountTreeTests {
    /// The layout marker of the store in `directory`, read without opening it for writing.
    static func layout(ofStoreIn directory: URL) throws -> String? {
        let environment = try Environment(
            directory: directory.path, mapSize: 1 << 20, maxMapSize: 1 << 30, durability: .none, readOnly: true)
        defer { environment.close() }
        return try environment.read { txn in
            guard let meta = try txn.openDatabase(TypeRegistry.metaName, create: false) else { return nil }
            return try txn.get(meta, key: TypeRegistry.layoutKey).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// The maintenance tool's commands that only read (`types`, `get`, `list`, `stats`, `export`, `verify`,
    /// `compact --output`) leave a store of an older layout as it is: they upgraded it, which locked the version that
    /// wrote it (0.1.0) out for good (/work/trial60.md, /work/trial66.md). A command that writes upgrades it to the
    /// count tree's layout, as an app does, but no further: layout 4 is for compact record headers, which only an
    /// app writes, and it would lock out a version of layout 3 for nothing.
    @Test func theToolsReadingCommandsLeaveAnOlderLayoutAsItIs() async throws {
        let directory = temporaryDirectory()
        var withoutTree = diskConfiguration(directory)
        withoutTree.withoutCountTree = true
        try await withStore(withoutTree) { storage async throws in
            try await storage.save(contentsOf: (0..<20).map { Gauge(id: "g\($0)", reading: Double($0), label: "l") })
            let meta = storage.core.meta
            try await storage.core.writer.perform { context in
                try OlderLayouts.keepEveryUpdateOrder(meta: meta, context: context)
                try context.txn.put(meta, key: TypeRegistry.layoutKey, value: Array("2".utf8))
            }
        }
        let store = withoutTree.storeDirectory
        let copy = temporaryDirectory().appendingPathComponent("copy").path
        for command in [
            ["types"], ["get", "Gauge", "g1"], ["list", "Gauge"], ["stats"], ["export"], ["verify"],
            ["compact", "--output", copy],
        ] {
            let result = try await CLIResult.run(command + ["--store", store.path], environment: nil)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(try Self.layout(ofStoreIn: store) == "2", "\(command) upgraded the store")
        }
        // The copy keeps the layout too: the app that owns the store may be the version that wrote it.
        let copied = URL(fileURLWithPath: copy).appendingPathComponent("LocalStorage")
        #expect(try Self.layout(ofStoreIn: copied) == "2")
        let purged = try await CLIResult.run(["purge-expired", "--store", store.path], environment: nil)
        #expect(purged.status == 0, "\(purged.stderr)")
        #expect(try Self.layout(ofStoreIn: store) == "\(TypeRegistry.countTreeLayout)")
        for command in [["delete", "Gauge", "g2"], ["verify", "--repair"], ["clear", "Gauge", "--yes"]] {
            let result = try await CLIResult.run(command + ["--store", store.path], environment: nil)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(try Self.layout(ofStoreIn: store) == "3", "\(command) upgraded the store to compact headers")
        }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try Self.layout(storage) == "\(TypeRegistry.declarationCountsLayout)")
        }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}

extension CountTreeTests {
    /// `CountTree.add` through one cursor (review-73 #6): a new counter goes in, an existing one changes in place, one
    /// that reaches zero is deleted, a change below zero of a missing one writes nothing, and a damaged one (not eight
    /// bytes) counts as zero: a positive change replaces it, a negative one deletes it.
    @Test func aCounterChangesInPlaceAndADamagedOneCountsAsZero() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(Gauge(id: "g", reading: 1, label: "l"))
        let counts = try #require(try await storage.core.schema(for: Gauge.self).counts)
        // A counter no record of the store has (type 999).
        let key = CountTree.counterPrefix(type: 999, slot: 1) + [3, 1, 2, 3]
        let steps: [(change: Int, damagedBefore: Bool, expected: UInt64?)] = [
            (2, false, 2), (3, false, 5), (-4, false, 1), (-1, false, nil), (-1, false, nil),
            (4, true, 4), (-1, true, nil), (0, false, nil),
        ]
        let observed = try await storage.core.writer.perform { context in
            try steps.map { step -> UInt64? in
                if step.damagedBefore { try context.txn.put(counts, key: key, value: [1, 2, 3]) }
                try CountTree.add(step.change, toCounter: key, counts: counts, txn: context.txn)
                return try context.txn.get(counts, key: key).map { stored -> UInt64 in
                    stored.count == 8 ? UInt64(littleEndian: stored.loadUnaligned(as: UInt64.self)) : UInt64.max
                }
            }
        }
        #expect(observed == steps.map(\.expected))
    }
}

extension CountTreeTests {
    /// Pages of a number range jump through the count tree in either order: a descending page is the ascending
    /// slice that ends where it begins, reversed, ids of one value too. Against a model, random ranges, page
    /// sizes and pages (past the end as well), on many duplicate values; a descending page walked every entry
    /// before it (all pages of n records cost n²/2pageSize visits), and now visits none of the index through the
    /// query's walk, as an ascending one. So do pages while a few records have expired and await their purge
    /// (they walked to their offset too, and a cache with time to live nearly always holds some): the page steps
    /// over them; with more than it places, it walks, as before.
    @Test(arguments: [0, 7, QueryExecutor.expiredPlacedAtMost + 1])
    func descendingPagesJumpThroughTheCountTreeAsAscendingOnesDo(expiredRecords: Int) async throws {
        let clock = VirtualClock()
        var configuration = diskConfiguration()
        configuration.clock = clock
        configuration.expirySweepInterval = nil
        let storage = try LocalStorage(configuration: configuration)
        var random = SplitMix64(seed: 0xDE5C + UInt64(expiredRecords))
        var model: [Gauge] = []
        for n in 0..<1_500 {
            // One in twenty without a reading: under the index's missing-value key, in no range.
            let reading = random.below(20) == 0 ? nil : Double(random.below(120)) - 40
            model.append(Gauge(id: "g\(n)", reading: reading, label: "l"))
        }
        try await storage.save(contentsOf: model)
        // Expired records among the live ones' values and ids (before, between and after them in each key).
        let expiring = (0..<expiredRecords).map { n in
            Gauge(id: "g\(random.below(1_600))x\(n)", reading: Double(random.below(120)) - 40, label: "l")
        }
        try await storage.save(contentsOf: expiring, expiration: .seconds(10))
        clock.advance(by: .seconds(11))
        let runtime = try await storage.core.schema(for: Gauge.self).runtime
        for step in 0..<120 {
            let (a, b) = (Double(random.below(140)) - 50, Double(random.below(140)) - 50)
            let range = min(a, b)...max(a, b)
            // Closed, half-open and open-ended ranges, with bounds on stored values and between them.
            let (filter, test): (StorageIndexFilter, (Double) -> Bool)
            switch random.below(5) {
            case 0: (filter, test) = (.atLeast("reading", a), { $0 >= a })
            case 1: (filter, test) = (.greaterThan("reading", a), { $0 > a })
            case 2: (filter, test) = (.atMost("reading", a), { $0 <= a })
            case 3: (filter, test) = (.lessThan("reading", a), { $0 < a })
            default: (filter, test) = (.between("reading", range), { range.contains($0) })
            }
            let ascending = model.filter { $0.reading.map(test) ?? false }.sorted { x, y in
                let (p, q) = (x.reading ?? 0, y.reading ?? 0)
                return p != q ? p < q : x.id.utf8.lexicographicallyPrecedes(y.id.utf8)
            }
            let descending = random.below(2) == 0
            let ordered = descending ? Array(ascending.reversed()) : ascending
            let pageSize = 1 + random.below(25)
            let pageNumber = 1 + random.below(ordered.count / pageSize + 2)
            let before = runtime.entriesVisited.load(ordering: .relaxed)
            let page = try await storage.page(
                Gauge.self, matching: [filter],
                orderedBy: descending ? .descending("reading") : .ascending("reading"), page: pageNumber,
                pageSize: pageSize)
            let visited = runtime.entriesVisited.load(ordering: .relaxed) - before
            let start = min(ordered.count, (pageNumber - 1) * pageSize)
            let what = "step \(step): page \(pageNumber) × \(pageSize) of \(filter)\(descending ? ", descending" : "")"
            #expect(page.totalCount == ordered.count, "\(what)")
            #expect(page.items.map(\.id) == ordered[start..<min(ordered.count, start + pageSize)].map(\.id), "\(what)")
            if expiredRecords <= QueryExecutor.expiredPlacedAtMost {
                #expect(visited == 0, "\(what): \(visited) entries walked")
            }
        }
    }
}
