import Foundation
import LocalStorageKit
import LocalStorageTestSupport

/// The workloads of issue 4, each run by every system on the same inputs.
enum Workloads {
    static let names = [
        "codec", "fetch", "range", "equals-sorted", "count-1%", "count", "count-50%", "page",
        "page-500", "scan", "bulk", "saves", "bounded", "live", "loading", "open", "shared",
    ]

    /// Contender names, which the summary rows and targets refer to.
    enum Name {
        static let localStorageKit = "LocalStorageKit"
        static let fromMainActor = "LocalStorageKit from @MainActor"
        static let memoryTierHit = "LocalStorageKit memory tier hit"
        static let withoutCountTree = "LocalStorageKit without count tree"
        static let withoutCountTreeConcurrent = "LocalStorageKit concurrent, no count tree"
        static let withoutCountTreeSequential = "LocalStorageKit sequential, no count tree"
        static let rawGet = "raw LMDB mdb_get only"
        static let raw = "raw LMDB"
        static let sqlite = "SQLite"
        static let localStorageKitConcurrent = "LocalStorageKit concurrent"
        static let localStorageKitSequential = "LocalStorageKit sequential"
        static let rawSequential = "raw LMDB sequential"
        static let sqliteConcurrent = "SQLite concurrent (8 connections)"
        static let sqliteSequential = "SQLite sequential"
    }

    /// A price range about a tenth of all products fall in (prices are uniform in 1.00 ... 999.99).
    static let rangeWidth = 100.0
    static let limit = 20
    static let pageNumber = 50
    static let pageSize = 20

    static func all(stores: Stores, products: [Product], options: BenchmarkOptions) -> [Workload] {
        var generator = SplitMix64(seed: options.seed &+ 1)
        let query = QuerySizes(isQuick: options.isQuick)
        return [
            codec(products, isQuick: options.isQuick),
            fetch(stores, records: products.count, isQuick: options.isQuick, generator: &generator),
            range(stores, query, generator: &generator),
            equalsSorted(stores, query, generator: &generator),
            count(stores, query, width: 10, name: "count-1%", generator: &generator),
            count(stores, query, width: rangeWidth, name: "count", generator: &generator),
            count(stores, query, width: 500, name: "count-50%", generator: &generator),
            page(stores, query, page: pageNumber, width: rangeWidth, name: "page", generator: &generator),
            page(stores, query, page: 500, width: 500, name: "page-500", generator: &generator),
            scan(stores, records: products.count, isQuick: options.isQuick),
            bulk(stores, products: products, isQuick: options.isQuick),
            saves(stores, isQuick: options.isQuick),
            bounded(stores, isQuick: options.isQuick),
            live(stores, isQuick: options.isQuick),
            loading(stores, isQuick: options.isQuick),
            open(stores, products: products, isQuick: options.isQuick),
        ]
            + (options.includes(workload: "shared")
                ? [shared(products: products, isQuick: options.isQuick)]
                    .compactMap { $0 } : [])
    }

    /// Batches and operations per batch of the query workloads.
    struct QuerySizes {
        let operations: Int
        let batches: Int

        init(isQuick: Bool) {
            operations = isQuick ? 40 : 150
            batches = isQuick ? 7 : 15
        }

        /// One input per operation of every batch, warm-up included.
        func inputs<Input>(_ make: () -> Input) -> [Input] {
            (0..<operations * (batches + 1)).map { _ in make() }
        }

        /// The inputs of batch `batch`.
        func slice<Input>(_ inputs: [Input], _ batch: Int) -> ArraySlice<Input> {
            inputs[batch * operations..<(batch + 1) * operations]
        }
    }

    // MARK: - Reads

    /// Foundation's JSON coders alone, as the library calls them (a new coder per record): the floor under
    /// every decoded read and every save while the payload is JSON.
    static func codec(_ products: [Product], isQuick: Bool) -> Workload {
        let operations = isQuick ? 1_000 : 2_000
        let sample = Array(products.prefix(operations))
        let payloads = sample.compactMap { try? JSONEncoder().encode($0) }
        let bytes = payloads.reduce(0) { $0 + $1.count } / max(payloads.count, 1)
        let decode = Contender(name: "JSONDecoder().decode", operations: payloads.count, isComparable: false) { _ in
            var checksum = Checksum()
            for payload in payloads { checksum.add(try JSONDecoder().decode(Product.self, from: payload)) }
            return checksum.value
        }
        let encode = Contender(name: "JSONEncoder().encode", operations: sample.count, isComparable: false) { _ in
            try sample.reduce(0) { $0 &+ (try JSONEncoder().encode($1)).count }
        }
        return Workload(
            name: "codec", description: "Foundation JSON decode and encode of one product (\(bytes) bytes on average)",
            batches: isQuick ? 7 : 21, contenders: [decode, encode], rows: [])
    }

    static func fetch(_ stores: Stores, records: Int, isQuick: Bool, generator: inout SplitMix64) -> Workload {
        let operations = isQuick ? 1_000 : 2_000
        let batches = isQuick ? 7 : 21
        let ids = (0..<operations * (batches + 1)).map { _ in Product.id(1 + generator.below(records)) }
        let slice = { (batch: Int) in ids[batch * operations..<(batch + 1) * operations] }
        var contenders: [Contender] = []
        if let system = stores.localStorageKit {
            contenders.append(
                Contender(name: Name.localStorageKit, operations: operations) {
                    try await system.fetch(slice($0))
                })
            contenders.append(
                Contender(name: Name.fromMainActor, operations: operations, isComparable: false) {
                    try await system.fetchFromMainActor(slice($0))
                })
        }
        if let tiered = stores.localStorageKitMemoryTier {
            // Each batch's ids are fetched once untimed (misses that fill the tier), then timed as hits.
            contenders.append(
                Contender(
                    name: Name.memoryTierHit, operations: operations,
                    prepare: { _ = try await tiered.fetch(slice($0)) },
                    run: { try await tiered.fetch(slice($0)) }))
        }
        if let system = stores.rawLMDB {
            contenders.append(
                Contender(
                    name: Name.rawGet, operations: operations,
                    isComparable: false
                ) { try system.getOnly(slice($0)) })
            contenders.append(
                Contender(name: Name.raw, operations: operations) {
                    try system.fetch(slice($0))
                })
        }
        if let system = stores.sqlite {
            contenders.append(
                Contender(name: Name.sqlite, operations: operations) {
                    try system.fetch(slice($0))
                })
        }
        return Workload(
            name: "fetch", description: "fetch(id) of a random id, decoded; raw: renew txn, mdb_get, reset",
            batches: batches, contenders: contenders,
            rows: [
                SummaryRow(
                    label: "fetch(id) vs raw mdb_get only", localStorageKit: Name.localStorageKit,
                    raw: Name.rawGet,
                    targets: [.atMost(2.5, "LSK/raw get ≤ 2.5×", Name.localStorageKit, over: Name.rawGet)]),
                SummaryRow(
                    label: "fetch(id), decoded", localStorageKit: Name.localStorageKit, raw: Name.raw,
                    sqlite: Name.sqlite,
                    targets: [.atLeast(3, "SQLite/LSK ≥ 3×", Name.sqlite, over: Name.localStorageKit)]),
                fromMainActorRow("fetch(id) from @MainActor"),
                SummaryRow(
                    label: "fetch(id), memory tier hit vs raw mdb_get", localStorageKit: Name.memoryTierHit,
                    raw: Name.rawGet,
                    targets: [.atMost(1, "hit/raw get ≤ 1×", Name.memoryTierHit, over: Name.rawGet)]),
                SummaryRow(
                    label: "fetch(id), memory tier hit vs plain fetch", localStorageKit: Name.memoryTierHit,
                    raw: Name.localStorageKit),
            ])
    }

    static func range(_ stores: Stores, _ sizes: QuerySizes, generator: inout SplitMix64) -> Workload {
        let ranges = sizes.inputs { priceRange(using: &generator) }
        return queryWorkload(
            name: "range", label: "between(price) by price, limit 20",
            description: "fetch matching .between(\"price\", a...a+100) ordered by .ascending(\"price\"), limit 20, "
                + "decoded (~10% of the records match)",
            sizes: sizes, targetRatio: 4, stores: stores, inputs: ranges,
            localStorageKit: { try await $0.fetch(priceIn: $1, limit: limit) },
            fromMainActor: { try await $0.fetchFromMainActor(priceIn: $1, limit: limit) },
            raw: { try $0.fetch(priceIn: $1, limit: limit) },
            sqlite: { try $0.fetch(priceIn: $1, limit: limit) })
    }

    static func equalsSorted(_ stores: Stores, _ sizes: QuerySizes, generator: inout SplitMix64) -> Workload {
        let categories = sizes.inputs { Product.categories[generator.below(Product.categories.count)] }
        return queryWorkload(
            name: "equals-sorted", label: "equals(category) by price desc, limit 20",
            description: "fetch matching .equals(\"category\", c) ordered by .descending(\"price\"), limit 20, "
                + "decoded (1 of 20 categories)",
            sizes: sizes, targetRatio: 3, stores: stores, inputs: categories,
            localStorageKit: { try await $0.fetch(category: $1, byDescendingPriceLimit: limit) },
            raw: { try $0.fetch(category: $1, byDescendingPriceLimit: limit) },
            sqlite: { try $0.fetch(category: $1, byDescendingPriceLimit: limit) })
    }

    static func count(
        _ stores: Stores, _ sizes: QuerySizes, width: Double, name: String,
        generator: inout SplitMix64
    ) -> Workload {
        let ranges = sizes.inputs { priceRange(width: width, using: &generator) }
        let share = "\(Int(width / 10))%"
        return queryWorkload(
            name: name, label: "count(between(price)), \(share)",
            description: "count matching .between(\"price\", a...a+\(Int(width))) (~\(share) of the records)",
            sizes: sizes, targetRatio: 20, stores: stores, inputs: ranges,
            localStorageKit: { try await $0.count(priceIn: $1) },
            raw: { try $0.count(priceIn: $1) },
            sqlite: { try $0.count(priceIn: $1) })
    }

    static func page(
        _ stores: Stores, _ sizes: QuerySizes, page: Int, width: Double, name: String,
        generator: inout SplitMix64
    ) -> Workload {
        let ranges = sizes.inputs { priceRange(width: width, using: &generator) }
        let first = (page - 1) * pageSize + 1
        return queryWorkload(
            name: name, label: "page \(page) × \(pageSize), \(Int(width / 10))% range by price",
            description: "page(matching: .between(\"price\", a...a+\(Int(width))), orderedBy: .ascending(\"price\"), "
                + "page: \(page), pageSize: \(pageSize)): rows \(first)-\(first + pageSize - 1) decoded, and the total count",
            sizes: sizes, targetRatio: 10, stores: stores, inputs: ranges,
            localStorageKit: { try await $0.page(priceIn: $1, page: page, pageSize: pageSize) },
            raw: { try $0.page(priceIn: $1, page: page, pageSize: pageSize) },
            sqlite: { try $0.page(priceIn: $1, page: page, pageSize: pageSize) })
    }

    static func scan(_ stores: Stores, records: Int, isQuick: Bool) -> Workload {
        var contenders: [Contender] = []
        if let system = stores.localStorageKit {
            contenders.append(
                Contender(name: Name.localStorageKit, operations: records) {
                    _ in try await system.scan()
                })
        }
        if let system = stores.rawLMDB {
            contenders.append(
                Contender(name: Name.raw, operations: records) { _ in
                    try system.scan()
                })
        }
        if let system = stores.sqlite {
            contenders.append(
                Contender(name: Name.sqlite, operations: records) { _ in
                    try system.scan()
                })
        }
        return Workload(
            name: "scan", description: "every record decoded, in id order; ns per record",
            batches: isQuick ? 3 : 7, warmups: isQuick ? 0 : 1, contenders: contenders,
            rows: [
                SummaryRow(
                    label: "full scan (per record)", localStorageKit: Name.localStorageKit, raw: Name.raw,
                    sqlite: Name.sqlite)
            ])
    }

    // MARK: - Helpers

    static func priceRange(width: Double = rangeWidth, using generator: inout SplitMix64) -> ClosedRange<Double> {
        // Prices are uniform in 1.00 ... 999.99: every range lies wholly inside.
        let lower = 1 + Double(generator.below(Int((999 - width) * 100))) / 100
        return lower...(lower + width)
    }

    /// The row comparing a read from `@MainActor` code with the same read from a nonisolated context.
    static func fromMainActorRow(_ label: String) -> SummaryRow {
        SummaryRow(
            label: label + " vs nonisolated", localStorageKit: Name.fromMainActor,
            targets: [
                .atMost(
                    1.2, "@MainActor/nonisolated ≤ 1.2×", Name.fromMainActor,
                    over: Name.localStorageKit)
            ])
    }

    /// A query workload: each contender runs the batch's inputs one after the other.
    static func queryWorkload<Input: Sendable>(
        name: String, label: String, description: String, sizes: QuerySizes, targetRatio: Double, stores: Stores,
        inputs: [Input],
        localStorageKit: @escaping (LocalStorageKitSystem, Input) async throws -> Int,
        fromMainActor: (@MainActor (LocalStorageKitSystem, Input) async throws -> Int)? = nil,
        raw: @escaping (RawLMDBSystem, Input) throws -> Int,
        sqlite: @escaping (SQLiteSystem, Input) throws -> Int
    ) -> Workload {
        var contenders: [Contender] = []
        if let system = stores.localStorageKit {
            contenders.append(
                Contender(
                    name: Name.localStorageKit,
                    operations: sizes.operations
                ) { batch in
                    var checksum = Checksum()
                    for input in sizes.slice(inputs, batch) { checksum.add(try await localStorageKit(system, input)) }
                    return checksum.value
                })
            if let fromMainActor {
                contenders.append(
                    Contender(name: Name.fromMainActor, operations: sizes.operations) { @MainActor batch in
                        var checksum = Checksum()
                        for input in sizes.slice(inputs, batch) { checksum.add(try await fromMainActor(system, input)) }
                        return checksum.value
                    })
            }
        }
        if let system = stores.rawLMDB {
            contenders.append(
                Contender(name: Name.raw, operations: sizes.operations) { batch in
                    try sizes.slice(inputs, batch).reduce(into: Checksum()) { $0.add(try raw(system, $1)) }.value
                })
        }
        if let system = stores.sqlite {
            contenders.append(
                Contender(name: Name.sqlite, operations: sizes.operations) { batch in
                    try sizes.slice(inputs, batch).reduce(into: Checksum()) { $0.add(try sqlite(system, $1)) }.value
                })
        }
        return Workload(
            name: name, description: description, batches: sizes.batches, contenders: contenders,
            rows: [
                SummaryRow(
                    label: label, localStorageKit: Name.localStorageKit, raw: Name.raw, sqlite: Name.sqlite,
                    targets: [
                        .atLeast(
                            targetRatio, "SQLite/LSK ≥ \(Int(targetRatio))×", Name.sqlite,
                            over: Name.localStorageKit)
                    ])
            ]
                + (fromMainActor == nil ? [] : [fromMainActorRow(label + " from @MainActor")]))
    }
}
