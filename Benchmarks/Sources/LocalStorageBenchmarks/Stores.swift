import Foundation
import LocalStorageKit

/// The read stores every workload but the bulk save uses: the same products in each system.
final class Stores {
    let directory: URL
    let options: BenchmarkOptions
    var localStorageKit: LocalStorageKitSystem?
    /// The same store made without a count tree, to measure what keeping it costs writes.
    var localStorageKitWithoutCountTree: LocalStorageKitSystem?
    /// A second store on the LocalStorageKit store's directory, with a memory tier that holds every record.
    var localStorageKitMemoryTier: LocalStorageKitSystem?
    var rawLMDB: RawLMDBSystem?
    var sqlite: SQLiteSystem?
    /// The SQLite store's file, for the workload that opens it again.
    var sqlitePath: String?
    /// How long loading each store took per record, by contender name: a bulk save into an empty store.
    var loadSamples: [String: Sample] = [:]

    /// The initial map size of the LMDB stores, so that none grows during a measurement.
    static let mapSize = 1 << 30

    private init(directory: URL, options: BenchmarkOptions) {
        self.directory = directory
        self.options = options
    }

    /// Creates and fills the stores of the systems the options include, each in one durable transaction.
    static func load(_ products: [Product], options: BenchmarkOptions, directory: URL) async throws -> Stores {
        let stores = Stores(directory: directory, options: options)
        let count = products.count
        if options.includes(.localStorageKit) {
            let system = try LocalStorageKitSystem(
                directory: directory.appendingPathComponent("lsk"),
                durability: .full, codec: options.codec, mapSize: mapSize)
            try await system.warmUp()
            let sample = try await Sample.measure(operations: count) { try await system.save(contentsOf: products) }
            stores.localStorageKit = system
            stores.record(sample, for: Workloads.Name.localStorageKit, count: count)
            stores.localStorageKitMemoryTier = try LocalStorageKitSystem(
                directory: directory.appendingPathComponent("lsk"), durability: .full, codec: options.codec,
                mapSize: mapSize, memoryCache: MemoryCacheConfiguration(maxRecords: count + 1, maxBytes: 1 << 30))
        }
        if options.includes(.localStorageKit) && options.loadsStoreWithoutCountTree {
            let plain = try LocalStorageKitSystem(
                directory: directory.appendingPathComponent("lsk-no-count-tree"),
                durability: .full, codec: options.codec, mapSize: mapSize,
                countTree: false)
            try await plain.warmUp()
            let plainSample = try await Sample.measure(operations: count) { try await plain.save(contentsOf: products) }
            stores.localStorageKitWithoutCountTree = plain
            stores.record(plainSample, for: Workloads.Name.withoutCountTree, count: count)
        }
        if options.includes(.rawLMDB) {
            let system = try RawLMDBSystem(
                directory: directory.appendingPathComponent("lmdb"), isDurable: true,
                mapSize: mapSize)
            let sample = try await Sample.measure(operations: count) { try system.save(contentsOf: products) }
            stores.rawLMDB = system
            stores.record(sample, for: Workloads.Name.raw, count: count)
        }
        if options.includes(.sqlite) {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent("sqlite"),
                withIntermediateDirectories: true)
            // Loaded like the bulk-save workload (synchronous=FULL), then read at synchronous=NORMAL.
            let path = directory.appendingPathComponent("sqlite/products.sqlite").path
            let system = try SQLiteSystem(path: path, synchronous: "FULL")
            let sample = try await Sample.measure(operations: count) { try system.save(contentsOf: products) }
            try system.setSynchronous("NORMAL")
            stores.sqlite = system
            stores.sqlitePath = path
            stores.record(sample, for: Workloads.Name.sqlite, count: count)
        }
        return stores
    }

    private func record(_ sample: Sample, for name: String, count: Int) {
        loadSamples[name] = sample
        Report.printLoad(name, count: count, seconds: sample.wall * Double(count) / 1e9)
    }

    /// Lets go of the stores (the scaling table opens one set per size).
    func close() {
        localStorageKit = nil
        localStorageKitWithoutCountTree = nil
        localStorageKitMemoryTier = nil
        rawLMDB = nil
        sqlite = nil
    }

    /// A fresh, empty directory for one bulk-save batch of one system.
    func scratchDirectory(_ name: String) throws -> URL {
        let url = directory.appendingPathComponent("scratch/\(name)", isDirectory: true)
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
