import Foundation
import LocalStorageKit
import LocalStorageTestSupport

/// The write workloads: bulk saves and single saves at each durability.
extension Workloads {
    static func bulk(_ stores: Stores, products: [Product], isQuick: Bool) -> Workload {
        let records = products.count
        var contenders: [Contender] = []
        if stores.options.includes(.localStorageKit) {
            let options = stores.options
            for (name, countTree) in [(Name.localStorageKit, true), (Name.withoutCountTree, false)] {
                let store = Slot<LocalStorageKitSystem>()
                contenders.append(
                    Contender(
                        name: name, operations: records, isComparable: false,
                        prepare: { batch in
                            store.value = nil
                            let system = try LocalStorageKitSystem(
                                directory: try stores.scratchDirectory("lsk-\(countTree)-\(batch)"), durability: .full,
                                codec: options.codec, mapSize: Stores.mapSize, countTree: countTree)
                            try await system.warmUp()
                            store.value = system
                        },
                        run: { _ in
                            try await store.get("store").save(contentsOf: products)
                            return 0
                        }))
            }
        }
        if stores.options.includes(.rawLMDB) {
            let store = Slot<RawLMDBSystem>()
            contenders.append(
                Contender(
                    name: Name.raw, operations: records,
                    prepare: { batch in
                        store.value = nil
                        store.value = try RawLMDBSystem(
                            directory: try stores.scratchDirectory("lmdb-\(batch)"),
                            isDurable: true, mapSize: Stores.mapSize)
                    },
                    run: { _ in
                        try store.get("store").save(contentsOf: products)
                        return 0
                    }))
        }
        if stores.options.includes(.sqlite) {
            let store = Slot<SQLiteSystem>()
            contenders.append(
                Contender(
                    name: Name.sqlite, operations: records,
                    prepare: { batch in
                        store.value = nil
                        let directory = try stores.scratchDirectory("sqlite-\(batch)")
                        store.value = try SQLiteSystem(
                            path: directory.appendingPathComponent("products.sqlite").path,
                            synchronous: "FULL")
                    },
                    run: { _ in
                        try store.get("store").save(contentsOf: products)
                        return 0
                    }))
        }
        return Workload(
            name: "bulk",
            description: "save(contentsOf:) of \(records) products with 3 indexes into an empty store, one "
                + "transaction, JSON encoding included; ns per record. The first sample is the loading of the "
                + "read store",
            durability: "durable commit: LocalStorageKit .full, raw LMDB default flags (fsync), "
                + "SQLite WAL + synchronous=FULL",
            batches: isQuick ? 0 : 4, warmups: 0, clock: .wall, contenders: contenders,
            earlierSamples: stores.loadSamples,
            rows: [
                SummaryRow(
                    label: "bulk save \(records) (per record)", localStorageKit: Name.localStorageKit,
                    raw: Name.raw, sqlite: Name.sqlite,
                    targets: [.atLeast(2.5, "SQLite/LSK ≥ 2.5×", Name.sqlite, over: Name.localStorageKit)]),
                SummaryRow(
                    label: "bulk save \(records), no count tree", localStorageKit: Name.withoutCountTree,
                    raw: Name.raw, sqlite: Name.sqlite),
            ])
    }

    static func saves(_ stores: Stores, isQuick: Bool) -> Workload {
        let concurrent = 1_000
        let sequential = isQuick ? 200 : 1_000
        let seed = stores.options.seed
        /// Fresh products for one batch, with ids no other batch or contender uses.
        func batchProducts(_ prefix: String, _ batch: Int, _ count: Int) -> [Product] {
            Product.generate(count: count, seed: seed &+ 1_000 &+ UInt64(batch)).enumerated().map {
                $0.element.withID("\(prefix)_\(batch)_\($0.offset)")
            }
        }
        var contenders: [Contender] = []
        let systems = [
            (stores.localStorageKit, Name.localStorageKitConcurrent, Name.localStorageKitSequential, "lsk"),
            (
                stores.localStorageKitWithoutCountTree, Name.withoutCountTreeConcurrent,
                Name.withoutCountTreeSequential, "lskn"
            ),
        ]
        for case (let system?, let concurrentName, let sequentialName, let prefix) in systems {
            let concurrentInputs = Slot<[Product]>()
            contenders.append(
                Contender(
                    name: concurrentName, operations: concurrent,
                    isComparable: false,
                    prepare: { concurrentInputs.value = batchProducts(prefix + "c", $0, concurrent) },
                    run: { _ in
                        try await system.saveConcurrently(try concurrentInputs.get("products"))
                        return 0
                    }))
            let sequentialInputs = Slot<[Product]>()
            contenders.append(
                Contender(
                    name: sequentialName, operations: sequential,
                    isComparable: false,
                    prepare: { sequentialInputs.value = batchProducts(prefix + "s", $0, sequential) },
                    run: { _ in
                        try await system.saveSequentially(try sequentialInputs.get("products"))
                        return 0
                    }))
        }
        if let system = stores.rawLMDB {
            let inputs = Slot<[Product]>()
            contenders.append(
                Contender(
                    name: Name.rawSequential, operations: sequential, isComparable: false,
                    prepare: { inputs.value = batchProducts("raws", $0, sequential) },
                    run: { _ in
                        for product in try inputs.get("products") { try system.save(product) }
                        return 0
                    }))
        }
        if let system = stores.sqlite {
            let inputs = Slot<[Product]>()
            contenders.append(
                Contender(
                    name: Name.sqliteSequential, operations: sequential, isComparable: false,
                    prepare: {
                        try system.setSynchronous("FULL")
                        inputs.value = batchProducts("sqls", $0, sequential)
                    },
                    run: { _ in
                        for product in try inputs.get("products") { try system.save(product) }
                        return 0
                    }))
            let concurrentInputs = Slot<[Product]>()
            let writers = Slot<[SQLiteSystem]>()
            let path = stores.directory.appendingPathComponent("sqlite/products.sqlite").path
            contenders.append(
                Contender(
                    name: Name.sqliteConcurrent, operations: concurrent, isComparable: false,
                    prepare: {
                        if writers.value == nil {
                            writers.value = try (0..<8).map { _ in try SQLiteSystem(path: path, synchronous: "FULL") }
                        }
                        concurrentInputs.value = batchProducts("sqlc", $0, concurrent)
                    },
                    run: { _ in
                        try SQLiteSystem.saveConcurrently(
                            try concurrentInputs.get("products"),
                            writers: try writers.get("writers"))
                        return 0
                    }))
        }
        return Workload(
            name: "saves",
            description: "\(concurrent) saves at once (one task each; SQLite: 8 threads, one connection each) vs "
                + "\(sequential) one after the other, each awaited until durable; into the 100k store",
            durability: "durable commit: LocalStorageKit .full, raw LMDB default flags (fsync), "
                + "SQLite WAL + synchronous=FULL",
            batches: isQuick ? 1 : 3, warmups: 0, clock: .wall, contenders: contenders,
            rows: [
                SummaryRow(
                    label: "1,000 durable saves, concurrent", localStorageKit: Name.localStorageKitConcurrent,
                    sqlite: Name.sqliteConcurrent,
                    targets: [
                        .atLeast(
                            20, "LSK sequential/concurrent ≥ 20×", Name.localStorageKitSequential,
                            over: Name.localStorageKitConcurrent)
                    ]),
                SummaryRow(
                    label: "durable saves, sequential", localStorageKit: Name.localStorageKitSequential,
                    raw: Name.rawSequential, sqlite: Name.sqliteSequential,
                    targets: [
                        .atMost(1.3, "LSK/raw durable ≤ 1.3×", Name.localStorageKitSequential, over: Name.rawSequential)
                    ]),
                SummaryRow(
                    label: "1,000 durable saves, concurrent, no count tree",
                    localStorageKit: Name.withoutCountTreeConcurrent, sqlite: Name.sqliteConcurrent),
                SummaryRow(
                    label: "durable saves, sequential, no count tree",
                    localStorageKit: Name.withoutCountTreeSequential, raw: Name.rawSequential,
                    sqlite: Name.sqliteSequential),
            ])
    }
}
