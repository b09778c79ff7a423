import Foundation
import LocalStorageKit

/// Opening a store and reading one record, as an app does at launch: `LocalStorage(configuration:)` and one
/// `fetch(_:id:)` on a store of the run's size (and, in a full run, of 1,000,000 records), against SQLite opened
/// the way GRDB opens a database (a connection, `journal_mode=WAL`, the schema checked, the statements
/// prepared) and one `SELECT` by id. The files are warm: every batch opens the same ones again.
extension Workloads {
    static let openLocalStorageKit = "LocalStorageKit open + fetch(_:id:)"
    static let openMillion = "LocalStorageKit open + fetch(_:id:), 1,000,000 records"
    static let openSQLite = "SQLite open + SELECT by id"
    /// The budget of the open of a 1,000,000-record store, in ns (issue 25: at most 5 ms warm).
    static let openMillionBudget = 5_000_000.0

    static func open(_ stores: Stores, products: [Product], isQuick: Bool) -> Workload {
        let opens = 20
        let ids = picked(opens, from: products)
        var contenders: [Contender] = []
        if stores.options.includes(.localStorageKit) {
            contenders.append(
                openContender(stores, name: openLocalStorageKit, opens: opens, products: { products }))
            if !isQuick {
                // Made when the workload runs, not when the list of workloads is built.
                contenders.append(
                    openContender(
                        stores, name: openMillion, opens: opens,
                        products: { Product.generate(count: 1_000_000, seed: 29) }))
            }
        }
        if stores.options.includes(.sqlite), let path = stores.sqlitePath {
            contenders.append(
                Contender(
                    name: openSQLite, operations: opens, isComparable: false,
                    run: { _ in
                        var found = 0
                        for id in ids {
                            let system = try SQLiteSystem(path: path)
                            found += try system.fetch([id][...]) == 0 ? 0 : 1
                        }
                        return found
                    }))
        }
        return Workload(
            name: "open",
            description: "open a store of the run's size (and, in a full run, of 1,000,000 records) and read one "
                + "record, then close it; SQLite opened as GRDB opens a database; wall time, warm files",
            batches: isQuick ? 3 : 7, clock: .wall, contenders: contenders,
            rows: [
                SummaryRow(
                    label: "open a store and read one record", localStorageKit: openLocalStorageKit,
                    sqlite: openSQLite,
                    targets: [.atMost(1.0, "LSK/SQLite open ≤ 1×", openLocalStorageKit, over: openSQLite)]),
                SummaryRow(
                    label: "open a 1,000,000-record store and read one record", localStorageKit: openMillion,
                    targets: [.withinBudget(openMillionBudget, "open 1M / 5 ms ≤ 1×", openMillion)]),
            ])
    }

    /// `count` ids spread over `products`.
    private static func picked(_ count: Int, from products: [Product]) -> [String] {
        products.isEmpty ? [] : (0..<count).map { products[($0 * 7_919) % products.count].id }
    }

    /// Opens a store of `products` (made once, in a scratch directory) and reads one of them each time.
    private static func openContender(
        _ stores: Stores, name: String, opens: Int, products: @escaping () -> [Product]
    ) -> Contender {
        let directory = Slot<URL>()
        let ids = Slot<[String]>()
        return Contender(
            name: name, operations: opens, isComparable: false,
            prepare: { _ in
                guard directory.value == nil else { return }
                let url = try stores.scratchDirectory(name == openMillion ? "open-million" : "open")
                var configuration = LocalStorageConfiguration()
                configuration.databaseDirectory = url
                configuration.durability = .none
                configuration.maxMapSize = 8 << 30
                let all = products()
                do {
                    let storage = try LocalStorage(configuration: configuration)
                    for start in stride(from: 0, to: all.count, by: 10_000) {
                        try await storage.save(contentsOf: Array(all[start..<min(all.count, start + 10_000)]))
                    }
                }
                ids.value = picked(opens, from: all)
                directory.value = url
            },
            run: { _ in
                var configuration = LocalStorageConfiguration()
                configuration.databaseDirectory = try directory.get("store directory")
                configuration.maxMapSize = 8 << 30
                var found = 0
                for id in try ids.get("ids") {
                    let storage = try LocalStorage(configuration: configuration)
                    if try await storage.fetch(Product.self, id: id) != nil { found += 1 }
                }
                return found
            })
    }
}
