import Foundation
import LocalStorageKit
import LocalStorageTestSupport

/// The bounded cache: what least-recently-used tracking and eviction cost a save, and how well the
/// store's LRU hits on a Zipf trace beside an exact LRU and Redis's sampled LRU.
extension Workloads {
    static let boundedPlain = "LocalStorageKit saves, no limits"
    static let boundedLRU = "LocalStorageKit saves, LRU limit (evicting)"
    static let boundedAdaptive = "LocalStorageKit saves, adaptive limit (evicting)"
    static let fetchLRU = "LocalStorageKit fetches, LRU limit"
    static let fetchAdaptive = "LocalStorageKit fetches, adaptive limit"

    static func bounded(_ stores: Stores, isQuick: Bool) -> Workload {
        let operations = isQuick ? 500 : 2_000
        var contenders: [Contender] = []
        if stores.options.includes(.localStorageKit) {
            let limit = StorageLimits(maxRecords: 1_000)
            for (name, limits, policy) in [
                (boundedPlain, nil, StorageEvictionPolicy.leastRecentlyUsed), (boundedLRU, limit, .leastRecentlyUsed),
                (boundedAdaptive, limit, .adaptive), (fetchLRU, limit, .leastRecentlyUsed),
                (fetchAdaptive, limit, .adaptive),
            ] {
                let fetches = name == fetchLRU || name == fetchAdaptive
                let store = Slot<LocalStorage>()
                contenders.append(
                    Contender(
                        name: name, operations: operations, isComparable: false,
                        prepare: { batch in
                            if store.value == nil {
                                var configuration = LocalStorageConfiguration()
                                configuration.databaseDirectory = try stores.scratchDirectory("bounded-\(name.count)")
                                configuration.durability = .none
                                configuration.limits = limits
                                configuration.evictionPolicy = policy
                                configuration.expirySweepInterval = nil
                                let storage = try LocalStorage(configuration: configuration)
                                // Full before the first timed batch, so every timed save evicts.
                                try await storage.save(contentsOf: Product.generate(count: 1_000, seed: 9))
                                store.value = storage
                            }
                        },
                        run: { batch in
                            let storage = try store.get("store")
                            if fetches {
                                // Reads of held records: each is noted for the writer, none writes.
                                for offset in 0..<operations {
                                    _ = try await storage.fetch(
                                        Product.self, id: Product.id(1 + (offset * 7 + batch) % 1_000))
                                }
                                return 0
                            }
                            for (offset, product) in Product.generate(count: operations, seed: UInt64(batch))
                                .enumerated()
                            {
                                try await storage.save(product.withID("b\(batch)_\(offset)"))
                            }
                            return 0
                        }))
            }
        }
        return Workload(
            name: "bounded",
            description: "one save after the other (durability .none, so the CPU cost shows), into a store "
                + "without limits vs one at its 1,000-record limit (LRU, adaptive), where every save evicts one "
                + "record; and fetches of held records from a store at its LRU or adaptive limit",
            batches: isQuick ? 3 : 9, clock: .wall, contenders: contenders,
            rows: [
                SummaryRow(
                    label: "save, LRU tracking + eviction vs no limits", localStorageKit: boundedLRU,
                    targets: [.atMost(2, "LRU/no limits ≤ 2×", boundedLRU, over: boundedPlain)]),
                SummaryRow(
                    label: "save, adaptive vs LRU eviction", localStorageKit: boundedAdaptive,
                    targets: [.atMost(1.2, "adaptive/LRU ≤ 1.2×", boundedAdaptive, over: boundedLRU)]),
                SummaryRow(
                    label: "fetch at a limit, adaptive vs LRU", localStorageKit: fetchAdaptive,
                    targets: [.atMost(1.1, "adaptive/LRU ≤ 1.1×", fetchAdaptive, over: fetchLRU)]),
            ])
    }

    /// Hit rates on one Zipf trace (a cache filled on misses): the store's LRU, an exact LRU, and a
    /// sampled LRU (sample 5, evict the oldest).
    static func printHitRates(_ options: BenchmarkOptions, directory: URL) async throws {
        let capacity = 1_000
        let trace = ZipfTrace(keys: 20_000, exponent: 1.0, length: options.isQuick ? 20_000 : 60_000, seed: 21)
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = directory
        configuration.durability = .none
        configuration.limits = StorageLimits(maxRecords: capacity)
        configuration.evictionPolicy = .leastRecentlyUsed
        configuration.expirySweepInterval = nil
        let storage = try LocalStorage(configuration: configuration)
        let product = Product.generate(count: 1, seed: 1)[0]
        var hits = 0
        for key in trace.keys {
            if try await storage.fetch(Product.self, id: "z\(key)") != nil {
                hits += 1
            } else {
                try await storage.save(product.withID("z\(key)"))
            }
        }
        let ours = Double(hits) / Double(trace.keys.count)
        let exact = ZipfTrace.exactLRUHitRate(trace.keys, capacity: capacity)
        let sampled = ZipfTrace.sampledLRUHitRate(trace.keys, capacity: capacity, sample: 5, seed: 5)
        Report.emit("\n## Hit rates\n")
        Report.emit(
            "Zipf trace (exponent 1.0, \(trace.keys.count) requests over 20,000 keys), a cache of "
                + "\(capacity) records filled on misses:\n")
        Report.emit("| cache | hit rate |")
        Report.emit("|---|---:|")
        for (name, rate) in [
            ("LocalStorageKit LRU (reads folded by the writer)", ours), ("exact LRU", exact),
            ("sampled LRU (sample 5, Redis-style)", sampled),
        ] {
            Report.emit("| \(name) | " + String(format: "%.2f%%", rate * 100) + " |")
        }
    }
}
