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
        var fetchCosts: [String: Double] = [:]
        var saveCosts: [String: Double] = [:]
        Report.emit("| store | data file | compacted | payload (plain) | file / payload | compacted / payload |")
        Report.emit("|---|---:|---:|---:|---:|---:|")
        for variant in variants {
            let directory = root.appendingPathComponent(variant.name.filter(\.isLetter))
            let configuration = configuration(variant, directory: directory)
            let payload = try await fill(configuration, with: products)
            if !variant.encrypted && !variant.compressed { plainPayload = payload }
            let file = try dataFileSize(configuration)
            (fetchCosts[variant.name], saveCosts[variant.name]) = try await costs(configuration, records: records)
            let compacted = try await compactedSize(configuration)
            let base = Double(max(plainPayload, 1))
            Report.emit(
                "| \(variant.name) | \(Report.mebibytes(file)) | \(Report.mebibytes(compacted)) | "
                    + "\(Report.mebibytes(plainPayload)) | \(ratio(Double(file) / base)) | "
                    + "\(ratio(Double(compacted) / base)) |")
        }
        let sqlite = try sqliteSize(products, directory: root.appendingPathComponent("sqlite"))
        Report.emit(
            "| SQLite (WAL checkpointed, same products as JSON) | \(Report.mebibytes(sqlite)) | – | "
                + "\(Report.mebibytes(plainPayload)) | \(ratio(Double(sqlite) / Double(max(plainPayload, 1)))) | – |")

        Report.emit("\nµs of CPU per operation; ratio against the plain store (target for encryption: ≤ 1.15×)\n")
        Report.emit("| store | fetch(id) | ratio | save (one record, its own commit) | ratio |")
        Report.emit("|---|---:|---:|---:|---:|")
        for variant in variants {
            let fetch = fetchCosts[variant.name] ?? 0
            let save = saveCosts[variant.name] ?? 0
            Report.emit(
                "| \(variant.name) | \(String(format: "%.2f", fetch / 1000)) | "
                    + "\(ratio(fetch / max(fetchCosts["plain"] ?? 1, 1))) | \(String(format: "%.2f", save / 1000)) | "
                    + "\(ratio(save / max(saveCosts["plain"] ?? 1, 1))) |")
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

    /// Saves every product in batches; returns the store's payload bytes.
    static func fill(_ configuration: LocalStorageConfiguration, with products: [Product]) async throws -> Int {
        let storage = try LocalStorage(configuration: configuration)
        for start in stride(from: 0, to: products.count, by: 10_000) {
            try await storage.save(contentsOf: Array(products[start..<min(products.count, start + 10_000)]))
        }
        return try await storage.statistics().payloadBytes
    }

    /// CPU nanoseconds of one `fetch(id:)` of a random id, and of one `save` of a changed product.
    static func costs(_ configuration: LocalStorageConfiguration, records: Int) async throws -> (Double, Double) {
        let storage = try LocalStorage(configuration: configuration)
        var generator = SplitMix64(seed: 7)
        let ids = (0..<20_000).map { _ in Product.id(1 + generator.below(records)) }
        for id in ids.prefix(2_000) { _ = try await storage.fetch(Product.self, id: id) }
        let fetchStart = Stats.processCPUTime()
        var found = 0
        for id in ids { if try await storage.fetch(Product.self, id: id) != nil { found += 1 } }
        let fetch = Double(Stats.processCPUTime() - fetchStart) / Double(ids.count)
        guard found == ids.count else { throw BenchmarkError("fetched \(found) of \(ids.count)") }
        let changed = Product.generate(count: 2_000, seed: 99).map {
            $0.withID(Product.id(1 + generator.below(records)))
        }
        let saveStart = Stats.processCPUTime()
        for product in changed { try await storage.save(product) }
        let save = Double(Stats.processCPUTime() - saveStart) / Double(changed.count)
        return (fetch, save)
    }

    /// The data file's size after it is compacted in place, once this process has closed the store (a
    /// closed store's environment goes away shortly after its last reference).
    static func compactedSize(_ configuration: LocalStorageConfiguration) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try StoreMaintenance.compactInPlace(directory: configuration.databaseDirectory).compactedBytes
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
