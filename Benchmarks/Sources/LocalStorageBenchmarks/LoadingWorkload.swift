import Foundation
import LocalStorageKit
import LocalStorageTestSupport
import Synchronization

/// Loading through the cache, and many records in one call: 1,000 concurrent callers on cold ids
/// through `fetch(_:id:load:)` against the hand-written fetch + save (how many loads each runs),
/// `fetch(_:ids:)` of 100 ids against 100 single fetches, and `delete(_:matching:)` of 10% of 100,000.
extension Workloads {
    static let loadThrough = "LocalStorageKit fetch(_:id:load:), 1,000 callers on 100 cold ids"
    static let loadByHand = "fetch + save by hand, 1,000 callers on 100 cold ids"
    static let fetchMany = "LocalStorageKit fetch(_:ids:), 100 ids"
    static let fetchEach = "LocalStorageKit 100 × fetch(_:id:)"
    static let deleteMatching = "LocalStorageKit delete(_:matching:), 10% of 100,000"

    static func loading(_ stores: Stores, isQuick: Bool) -> Workload {
        var contenders: [Contender] = []
        if stores.options.includes(.localStorageKit) {
            contenders += coldLoadContenders(stores)
            contenders += manyRecordContenders(stores)
            contenders.append(deleteMatchingContender(stores, isQuick: isQuick))
        }
        return Workload(
            name: "loading",
            description: "1,000 concurrent callers asking for 100 cold ids (10 each; every load takes 1 ms) through "
                + "the cache vs by hand (the loads each ran are printed); fetch(_:ids:) of 100 ids vs 100 "
                + "fetches on 10,000 records; delete(_:matching:) of one category in ten of 100,000 records",
            batches: isQuick ? 3 : 9, clock: .wall, contenders: contenders,
            rows: [
                SummaryRow(label: "1,000 callers, 100 cold ids, through the cache", localStorageKit: loadThrough),
                SummaryRow(label: "1,000 callers, 100 cold ids, fetch + save by hand", localStorageKit: loadByHand),
                SummaryRow(
                    label: "fetch(_:ids:) of 100 vs 100 fetches (aim ≥ 1.5×)", localStorageKit: fetchMany,
                    targets: [.atLeast(1.5, "100 fetches/fetch(ids:) ≥ 1.5×", fetchEach, over: fetchMany)]),
                SummaryRow(label: "delete(_:matching:) of 10,000 of 100,000", localStorageKit: deleteMatching),
            ])
    }

    private static func scratchStore(_ stores: Stores, _ name: String) throws -> LocalStorage {
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = try stores.scratchDirectory(name)
        configuration.durability = .none
        configuration.expirySweepInterval = nil
        configuration.maxMapSize = 8 << 30
        return try LocalStorage(configuration: configuration)
    }

    private static func coldLoadContenders(_ stores: Stores) -> [Contender] {
        var contenders: [Contender] = []
        for (name, throughCache) in [(loadThrough, true), (loadByHand, false)] {
            let store = Slot<LocalStorage>()
            let loads = Atomic<Int>(0)
            contenders.append(
                Contender(
                    name: name, operations: 1_000, isComparable: false,
                    prepare: { _ in
                        if store.value == nil { store.value = try scratchStore(stores, "loading-\(throughCache)") }
                    },
                    run: { batch in
                        let storage = try store.get("store")
                        let before = loads.load(ordering: .relaxed)
                        let load: @Sendable (String) async throws -> Product? = { id in
                            loads.add(1, ordering: .relaxed)
                            try await Task.sleep(for: .milliseconds(1))
                            return Product.generate(count: 1, seed: 5)[0].withID(id)
                        }
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            for caller in 0..<1_000 {
                                let id = "cold-\(batch)-\(caller % 100)"
                                group.addTask {
                                    if throughCache {
                                        _ = try await storage.fetch(Product.self, id: id, load: load)
                                    } else if try await storage.fetch(Product.self, id: id) == nil,
                                        let value = try await load(id)
                                    {
                                        try await storage.save(value)
                                    }
                                }
                            }
                            try await group.waitForAll()
                        }
                        let ran = loads.load(ordering: .relaxed) - before
                        print("loading: \(name): \(ran) loads for 100 ids in batch \(batch)")
                        return ran
                    }))
        }
        return contenders
    }

    private static func manyRecordContenders(_ stores: Stores) -> [Contender] {
        let store = Slot<LocalStorage>()
        let all = Product.generate(count: 10_000, seed: 3).map(\.id)
        // Each batch times 20 calls of 100 ids, not one: a single call of ~200 µs is dominated by the caches
        // the previous contender left cold.
        let rounds = 20
        // The same 100 ids (and one missing) for both contenders in a round.
        let ids: (Int) -> [String] = { batch in
            var generator = SplitMix64(seed: UInt64(batch) + 17)
            return (0..<100).map { _ in all[generator.below(all.count)] } + ["missing-\(batch)"]
        }
        // Every record is read once after the save, so that neither contender pays for the first touch of
        // the map's pages (the one that runs first in a batch would).
        let prepare: (Int) async throws -> Void = { _ in
            guard store.value == nil else { return }
            let storage = try scratchStore(stores, "fetch-many")
            try await storage.save(contentsOf: Product.generate(count: 10_000, seed: 3))
            _ = try await storage.fetch(Product.self, ids: all)
            store.value = storage
        }
        return [
            Contender(
                name: fetchMany, operations: rounds, isComparable: false, prepare: prepare,
                run: { batch in
                    let storage = try store.get("store")
                    var found = 0
                    for round in 0..<rounds {
                        found += try await storage.fetch(Product.self, ids: ids(batch * rounds + round)).count
                    }
                    return found
                }),
            Contender(
                name: fetchEach, operations: rounds, isComparable: false, prepare: prepare,
                run: { batch in
                    let storage = try store.get("store")
                    var found = 0
                    for round in 0..<rounds {
                        for id in ids(batch * rounds + round) where try await storage.fetch(Product.self, id: id) != nil
                        {
                            found += 1
                        }
                    }
                    return found
                }),
        ]
    }

    private static func deleteMatchingContender(_ stores: Stores, isQuick: Bool) -> Contender {
        let store = Slot<LocalStorage>()
        return Contender(
            name: deleteMatching, operations: 1, isComparable: false,
            prepare: { batch in
                let storage = try scratchStore(stores, "delete-matching-\(batch)")
                let products = Product.generate(count: 100_000, seed: 11).enumerated().map { offset, product in
                    var row = product
                    row.category = "c\(offset % 10)"
                    return row
                }
                try await storage.save(contentsOf: products)
                store.value = storage
            },
            run: { _ in
                let storage = try store.get("store")
                return try await storage.delete(Product.self, matching: [.equals("category", "c3")])
            })
    }
}
