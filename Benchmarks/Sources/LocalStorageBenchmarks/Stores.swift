import Foundation
import LocalStorageKit

/// The read stores every workload but the bulk save uses: the same products in each system.
final class Stores {
    let directory: URL
    let options: BenchmarkOptions
    var localStorageKit: LocalStorageKitSystem?
    var rawLMDB: RawLMDBSystem?
    var sqlite: SQLiteSystem?

    /// The initial map size of the LMDB stores, so that none grows during a measurement.
    static let mapSize = 1 << 30

    private init(directory: URL, options: BenchmarkOptions) {
        self.directory = directory
        self.options = options
    }

    /// Creates and fills the stores of the systems the options include, each in one durable transaction.
    static func load(_ products: [Product], options: BenchmarkOptions, directory: URL) async throws -> Stores {
        let stores = Stores(directory: directory, options: options)
        if options.includes(.localStorageKit) {
            let start = Stats.now()
            let system = try LocalStorageKitSystem(directory: directory.appendingPathComponent("lsk"),
                                                   durability: .full, codec: options.codec, mapSize: mapSize)
            try await system.save(contentsOf: products)
            stores.localStorageKit = system
            Report.printLoad("LocalStorageKit", count: products.count, nanoseconds: Stats.now() - start)
        }
        if options.includes(.rawLMDB) {
            let start = Stats.now()
            let system = try RawLMDBSystem(directory: directory.appendingPathComponent("lmdb"), isDurable: true,
                                           mapSize: mapSize)
            try system.save(contentsOf: products)
            stores.rawLMDB = system
            Report.printLoad("raw LMDB", count: products.count, nanoseconds: Stats.now() - start)
        }
        if options.includes(.sqlite) {
            let start = Stats.now()
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("sqlite"),
                                                    withIntermediateDirectories: true)
            let system = try SQLiteSystem(path: directory.appendingPathComponent("sqlite/products.sqlite").path)
            try system.save(contentsOf: products)
            stores.sqlite = system
            Report.printLoad("SQLite", count: products.count, nanoseconds: Stats.now() - start)
        }
        return stores
    }

    /// A fresh, empty directory for one bulk-save batch of one system.
    func scratchDirectory(_ name: String) throws -> URL {
        let url = directory.appendingPathComponent("scratch/\(name)", isDirectory: true)
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
