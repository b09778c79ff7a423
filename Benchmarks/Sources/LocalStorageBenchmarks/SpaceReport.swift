import Foundation
@_spi(Maintenance) import LocalStorageKit
import LocalStorageTestSupport

/// Issue 26's rows (`LocalStorageBenchmarks --space [--records N]`, default 1,000,000): bytes on disk per
/// payload byte with and without compression and encryption, beside SQLite's file for the same products;
/// the cost of encryption and compression on a fetch and a save; and a store that grew to N records and
/// shrank to a tenth, before and after compaction (in place, as at open).
enum SpaceReport {
    /// One way of storing the products.
    struct Variant {
        let name: String
        let encrypted: Bool
        let compressed: Bool
    }

    static let variants = [
        Variant(name: "plain", encrypted: false, compressed: false),
        Variant(name: ".zstd()", encrypted: false, compressed: true),
        Variant(name: "encrypted", encrypted: true, compressed: false),
        Variant(name: "encrypted + .zstd()", encrypted: true, compressed: true),
    ]

    static func run(arguments: [String]) async throws {
        var records = 1_000_000
        if let index = arguments.firstIndex(of: "--records"), index + 1 < arguments.count {
            guard let count = Int(arguments[index + 1]), count >= 10_000 else {
                throw BenchmarkError("--records needs a number of at least 10000")
            }
            records = count
        }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lsk-space-\(UUID().uuidString)")
        defer { removeScratch(root) }
        let products = Product.generate(count: records, seed: 26)
        Report.emit("# Space (issue 26): \(Report.grouped(Double(records))) products, 3 indexes, binary codec\n")

        var plainPayload = 0
        Report.emit("| store | data file | compacted | payload (plain) | file / payload | compacted / payload |")
        Report.emit("|---|---:|---:|---:|---:|---:|")
        let configurations = variants.map {
            configuration($0, directory: root.appendingPathComponent($0.name.filter(\.isLetter)))
        }
        for (variant, configuration) in zip(variants, configurations) {
            let payload = try await fill(configuration, with: products)
            if !variant.encrypted && !variant.compressed { plainPayload = payload }
            try await emitSizes(of: configuration, named: variant.name, payload: plainPayload)
        }
        try await smallRecordsRow(count: records, directory: root.appendingPathComponent("small"))
        let sqlite = try sqliteSize(products, directory: root.appendingPathComponent("sqlite"))
        Report.emit(
            "| SQLite (WAL checkpointed, same products as JSON) | \(Report.mebibytes(sqlite)) | – | "
                + "\(Report.mebibytes(plainPayload)) | \(ratio(Double(sqlite) / Double(max(plainPayload, 1)))) | – |")

        let costs = try await costs(configurations, records: records)
        Report.emit(
            "\nµs of CPU per operation, the median of \(costRounds) rounds that take turns between the stores; ratio: the "
                + "median of each round's ratio against the plain store (target for encryption: ≤ 1.15×)\n")
        Report.emit("| store | fetch(id) | ratio | save (one record, its own commit) | ratio |")
        Report.emit("|---|---:|---:|---:|---:|")
        for (variant, cost) in zip(variants, costs) {
            Report.emit(
                "| \(variant.name) | \(String(format: "%.2f", cost.fetch / 1000)) | \(ratio(cost.fetchRatio)) | "
                    + "\(String(format: "%.2f", cost.save / 1000)) | \(ratio(cost.saveRatio)) |")
        }

        try await growAndShrink(products, directory: root.appendingPathComponent("shrink"))
    }

    // MARK: - Steps

    static func configuration(_ variant: Variant, directory: URL) -> LocalStorageConfiguration {
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = directory
        configuration.durability = .none
        configuration.mapSize = 1 << 30
        configuration.expirySweepInterval = nil
        if variant.encrypted { configuration.encryption = StorageEncryption(key: Data((0..<32).map { UInt8($0) })) }
        if variant.compressed { configuration.compression = .zstd() }
        return configuration
    }

    /// Issue 26's own example of small records: an 8-character id, an indexed 8-character owner (1,000 of them), an
    /// integer and a Boolean.
    struct SmallRecord: LocalStorageIndexed {
        let id: String
        var owner: String
        var count: Int
        var flag: Bool

        static var storageIndexes: [StorageIndex<SmallRecord>] { [StorageIndex("owner", \.owner)] }
    }

    /// The plain store's row for `count` small records, saved in batches of 10,000 as the products are.
    static func smallRecordsRow(count: Int, directory: URL) async throws {
        let configuration = configuration(variants[0], directory: directory)
        var generator = SplitMix64(seed: 40)
        let payload: Int
        do {
            let storage = try LocalStorage(configuration: configuration)
            for start in stride(from: 0, to: count, by: 10_000) {
                let batch = (start..<min(count, start + 10_000)).map { n in
                    SmallRecord(
                        id: "s" + String(n + 10_000_000).suffix(7),
                        owner: "o" + String(generator.below(1_000) + 10_000_000).suffix(7),
                        count: n, flag: n % 2 == 0)
                }
                try await storage.save(contentsOf: batch)
            }
            payload = try await storage.statistics().payloadBytes
        }
        try await emitSizes(
            of: configuration, named: "plain, \(Report.grouped(Double(count))) small records (issue 26's example)",
            payload: payload)
    }

    /// A row of the sizes table: the store's data file and its compacted size, against `payload` bytes.
    static func emitSizes(of configuration: LocalStorageConfiguration, named name: String, payload: Int) async throws {
        let file = try dataFileSize(configuration)
        let compacted = try await compactedSize(configuration)
        let base = Double(max(payload, 1))
        Report.emit(
            "| \(name) | \(Report.mebibytes(file)) | \(Report.mebibytes(compacted)) | \(Report.mebibytes(payload)) | "
                + "\(ratio(Double(file) / base)) | \(ratio(Double(compacted) / base)) |")
    }

    /// Saves every product in batches; returns the store's payload bytes.
    static func fill(_ configuration: LocalStorageConfiguration, with products: [Product]) async throws -> Int {
        let storage = try LocalStorage(configuration: configuration)
        for start in stride(from: 0, to: products.count, by: 10_000) {
            try await storage.save(contentsOf: Array(products[start..<min(products.count, start + 10_000)]))
        }
        return try await storage.statistics().payloadBytes
    }

    /// What a fetch and a save cost in one store: medians over the rounds, in CPU nanoseconds, and of each
    /// round's ratio against the first store's.
    struct Cost {
        var fetch = 0.0
        var save = 0.0
        var fetchRatio = 0.0
        var saveRatio = 0.0
    }

    /// Rounds of ``costs(_:records:)``: each times every store once, in turn.
    static let costRounds = 9

    /// CPU nanoseconds of one `fetch(id:)` of a random id, and of one `save` of a changed product, in each store.
    ///
    /// One sample per store swung by 10–40% on this shared machine (the stores' samples were minutes apart), so
    /// the stores take turns: every round times 3,000 fetches and 200 saves in each, and a store's ratio is the
    /// median of its per-round ratios against the first (plain) store's, measured seconds apart.
    static func costs(_ configurations: [LocalStorageConfiguration], records: Int) async throws -> [Cost] {
        let stores = try configurations.map { try LocalStorage(configuration: $0) }
        var generator = SplitMix64(seed: 7)
        // Every store reads its pages once first, so no round pays for the first touch of the map.
        for storage in stores {
            for start in stride(from: 1, through: records, by: 10_000) {
                let ids = (start..<min(records + 1, start + 10_000)).map(Product.id)
                _ = try await storage.fetch(Product.self, ids: ids)
            }
        }
        var fetches = Array(repeating: [Double](), count: stores.count)
        var saves = Array(repeating: [Double](), count: stores.count)
        for round in 0..<costRounds {
            let ids = (0..<3_000).map { _ in Product.id(1 + generator.below(records)) }
            let changed = Product.generate(count: 200, seed: 99 + UInt64(round)).map {
                $0.withID(Product.id(1 + generator.below(records)))
            }
            for (position, storage) in stores.enumerated() {
                let fetchStart = Stats.processCPUTime()
                var found = 0
                for id in ids { if try await storage.fetch(Product.self, id: id) != nil { found += 1 } }
                fetches[position].append(Double(Stats.processCPUTime() - fetchStart) / Double(ids.count))
                guard found == ids.count else { throw BenchmarkError("fetched \(found) of \(ids.count)") }
                let saveStart = Stats.processCPUTime()
                for product in changed { try await storage.save(product) }
                saves[position].append(Double(Stats.processCPUTime() - saveStart) / Double(changed.count))
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        return stores.indices.map { position in
            Cost(
                fetch: median(fetches[position]), save: median(saves[position]),
                fetchRatio: median(zip(fetches[position], fetches[0]).map { $0 / max($1, 1) }),
                saveRatio: median(zip(saves[position], saves[0]).map { $0 / max($1, 1) }))
        }
    }

    /// The data file's size after it is compacted in place, once this process has closed the store (a
    /// closed store's environment goes away shortly after its last reference).
    static func compactedSize(_ configuration: LocalStorageConfiguration) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try StoreMaintenance.compactInPlace(
                    directory: configuration.databaseDirectory, encryption: configuration.encryption
                )
                .compactedBytes
            } catch LocalStorageError.storageError(let code, _) where code == EBUSY && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    static func sqliteSize(_ products: [Product], directory: URL) throws -> Int {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("products.sqlite").path
        do {
            let sqlite = try SQLiteSystem(path: path, synchronous: "OFF")
            for start in stride(from: 0, to: products.count, by: 50_000) {
                try sqlite.save(contentsOf: Array(products[start..<min(products.count, start + 50_000)]))
            }
            try sqlite.checkpoint()
        }
        let wal = path + "-wal"
        return try fileSize(path) + (FileManager.default.fileExists(atPath: wal) ? try fileSize(wal) : 0)
    }

    /// A store that grew to every product and shrank to a tenth: its file before and after compaction.
    static func growAndShrink(_ products: [Product], directory: URL) async throws {
        let configuration = configuration(variants[0], directory: directory)
        _ = try await fill(configuration, with: products)
        let grown = try dataFileSize(configuration)
        let left: Int
        do {  // The store is closed again before it is compacted.
            let storage = try LocalStorage(configuration: configuration)
            let doomed = products.indices.filter { $0 % 10 != 0 }.map { products[$0].id }
            for start in stride(from: 0, to: doomed.count, by: 10_000) {
                let batch = doomed[start..<min(doomed.count, start + 10_000)]
                try await storage.write { tx in for id in batch { try tx.delete(Product.self, id: id) } }
            }
            left = try await storage.count(Product.self)
        }
        let shrunk = try dataFileSize(configuration)
        let after = try await compactedSize(configuration)
        Report.emit(
            "\nA store grown to \(Report.grouped(Double(products.count))) products, then shrunk to "
                + "\(Report.grouped(Double(left))): data file \(Report.mebibytes(grown)) grown, "
                + "\(Report.mebibytes(shrunk)) shrunk, \(Report.mebibytes(after)) after compaction.")
    }

    // MARK: - Helpers

    static func dataFileSize(_ configuration: LocalStorageConfiguration) throws -> Int {
        try fileSize(configuration.databaseDirectory.appendingPathComponent("LocalStorage/data.mdb").path)
    }

    static func fileSize(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        guard let size = (attributes[.size] as? NSNumber)?.intValue else { throw BenchmarkError("no size: \(path)") }
        return size
    }

    static func ratio(_ value: Double) -> String { String(format: "%.2f×", value) }

    static func removeScratch(_ directory: URL) {
        do {
            try FileManager.default.removeItem(at: directory)
        } catch {
            Report.emit("could not remove \(directory.path): \(error)")
        }
    }
}
