import Foundation
@_spi(Benchmarks) import LocalStorageKit

extension Workloads {
    static let liveOneRow = "LocalStorageKit save → live emission, 1 row"
    static let liveThousandRows = "LocalStorageKit save → live emission, 1,000 rows"
    static let liveOneRowFirstDesign = "first design: save → live emission, 1 row"
    static let liveThousandRowsFirstDesign = "first design: save → live emission, 1,000 rows"

    /// How long a save takes to reach a live query that watches it, when the store is otherwise idle: one
    /// save per batch (after a pause longer than the coalescing window), the batch ends when the query
    /// emits the saved value. Once with a one-row result, once with a 1,000-row result (the rerun's cost).
    static func live(_ stores: Stores, isQuick: Bool) -> Workload {
        var contenders: [Contender] = []
        if let system = stores.localStorageKit {
            contenders.append(
                LiveProbe(storage: system.storage, category: "live-one", rows: 1)
                    .contender(name: liveOneRow))
            contenders.append(
                LiveProbe(storage: system.storage, category: "live-thousand", rows: 1_000)
                    .contender(name: liveThousandRows))
            // The same store through a second instance whose live queries behave as the first design did.
            var configuration = system.storage.configuration
            configuration.liveQueriesUseTheFirstDesign = true
            do {
                let firstDesign = try LocalStorage(configuration: configuration)
                contenders.append(
                    LiveProbe(storage: firstDesign, category: "live-one-first", rows: 1)
                        .contender(name: liveOneRowFirstDesign))
                contenders.append(
                    LiveProbe(storage: firstDesign, category: "live-thousand-first", rows: 1_000)
                        .contender(name: liveThousandRowsFirstDesign))
            } catch {
                print("live: no first-design baseline (\(error))")
            }
        }
        return Workload(
            name: "live",
            description: "a save reaching a live query on the category it changes (idle: 60 ms apart, more than "
                + "the 50 ms coalescing window), until the query emits it; wall time per save, emission included",
            durability: "durable commit: LocalStorageKit .full",
            batches: isQuick ? 15 : 41, warmups: 2, clock: .wall, contenders: contenders,
            rows: [
                SummaryRow(
                    label: "save → live query emission, idle, 1 row (aim ≤ 5 ms)", localStorageKit: liveOneRow,
                    targets: [.atLeast(5, "first design/LSK ≥ 5×", liveOneRowFirstDesign, over: liveOneRow)]),
                SummaryRow(
                    label: "save → live query emission, 1,000-row result", localStorageKit: liveThousandRows,
                    targets: [
                        .atLeast(
                            1, "first design/LSK ≥ 1×", liveThousandRowsFirstDesign,
                            over: liveThousandRows)
                    ]),
            ])
    }
}

/// One live query on a category of its own, and the saves that change it.
final class LiveProbe: @unchecked Sendable {
    // @unchecked: used by one benchmark task at a time, batch after batch.
    let storage: LocalStorage
    let category: String
    let rows: Int
    private var products: [Product] = []
    private var iterator: AsyncThrowingStream<[Product], Error>.AsyncIterator?
    private var saves = 0

    init(storage: LocalStorage, category: String, rows: Int) {
        self.storage = storage
        self.category = category
        self.rows = rows
    }

    func contender(name: String) -> Contender {
        Contender(
            name: name, operations: 1, isComparable: false,
            prepare: { _ in try await self.prepare() }, run: { _ in try await self.saveAndAwaitEmission() })
    }

    /// The first time: the category's rows and the live query; every time: a pause longer than the window.
    private func prepare() async throws {
        if iterator == nil {
            products = Product.generate(count: rows, seed: 0x11FE).enumerated().map { offset, product in
                var row = product.withID("\(category)-\(offset)")
                row.category = category
                return row
            }
            try await storage.save(contentsOf: products)
            var live = storage.updates(of: Product.self, matching: [.equals("category", category)])
                .makeAsyncIterator()
            _ = try await live.next()
            iterator = live
        }
        try await Task.sleep(for: .milliseconds(60))
    }

    /// Saves one row with a new price and waits until the live query shows it.
    private func saveAndAwaitEmission() async throws -> Int {
        saves += 1
        var row = products[saves % products.count]
        row.price = Double(saves) + 0.25
        try await storage.save(row)
        while true {
            guard let result = try await iterator?.next() else { throw BenchmarkError("the live query ended") }
            if result.contains(where: { $0.id == row.id && $0.price == row.price }) { return result.count }
        }
    }
}
