import Foundation
import LocalStorageKit
import LocalStorageTestSupport

/// `LocalStorageBenchmarks --hitratio DIRECTORY [--requests N]`: replays the standard cache traces
/// (``HitRatioTrace``) through a real bounded store (each request a `fetch`, a miss a `save`) under
/// `.adaptive` and `.leastRecentlyUsed`, beside the reference model of `.adaptive` and Belady's optimum,
/// and writes each trace (one id a line) and `ours.tsv` into DIRECTORY for scripts/hitratio.py, which
/// adds libCacheSim's LRU, ARC, S3-FIFO, SIEVE and W-TinyLFU and prints the table (`make bench-hitratio`).
enum HitRatioHarness {
    /// A record of the traces: an id and nothing else.
    struct Item: LocalStorable {
        let id: String
    }

    static let objects = 100_000

    static func run(arguments: [String]) async throws {
        guard let path = arguments.first else { throw BenchmarkError("--hitratio needs a directory") }
        var requests = 400_000
        if arguments.count >= 3, arguments[1] == "--requests", let count = Int(arguments[2]), count >= 1_000 {
            requests = count
        }
        let modelOnly = arguments.contains("--model-only")
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var rows = "trace\tcache\trequests\tpolicy\tmiss_ratio\n"
        for cacheSize in [objects / 100, objects / 10] {
            for trace in HitRatioTrace.standard(objects: objects, length: requests, cacheSize: cacheSize) {
                let file = directory.appendingPathComponent("\(trace.name)-\(cacheSize).trace")
                try Data(trace.keys.map(String.init).joined(separator: "\n").utf8).write(to: file)
                var results: [(String, Double)] = [
                    ("Belady", HitRatioTrace.beladyMissRatio(trace.keys, capacity: cacheSize)),
                    ("model adaptive", modelMissRatio(trace.keys, capacity: cacheSize)),
                ]
                for policy in modelOnly ? [] : [StorageEvictionPolicy.adaptive, .leastRecentlyUsed] {
                    let started = Date()
                    let ratio = try await storeMissRatio(
                        trace.keys, capacity: cacheSize, policy: policy, directory: directory)
                    results.append(("store \(policy)", ratio))
                    FileHandle.standardError.write(
                        Data(
                            "\(trace.name) \(cacheSize) \(policy): \(String(format: "%.4f", ratio)) "
                                .utf8 + Data(String(format: "(%.1f s)\n", Date().timeIntervalSince(started)).utf8)))
                }
                if modelOnly { FileHandle.standardError.write(Data("\(trace.name) \(cacheSize) \(results)\n".utf8)) }
                for (policy, ratio) in results {
                    rows += "\(trace.name)\t\(cacheSize)\t\(trace.keys.count)\t\(policy)\t\(ratio)\n"
                }
            }
        }
        try Data(rows.utf8).write(to: directory.appendingPathComponent("ours.tsv"))
    }

    /// The miss ratio of a real store bounded to `capacity` records: each request a fetch, a miss a save.
    static func storeMissRatio(
        _ keys: [Int], capacity: Int, policy: StorageEvictionPolicy, directory: URL
    ) async throws -> Double {
        let folder = directory.appendingPathComponent("store-\(UUID().uuidString)", isDirectory: true)
        defer {
            do {
                try FileManager.default.removeItem(at: folder)
            } catch {
                FileHandle.standardError.write(Data("could not remove \(folder.path): \(error)\n".utf8))
            }
        }
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = folder
        configuration.durability = .none
        configuration.limits = StorageLimits(maxRecords: capacity)
        configuration.evictionPolicy = policy
        configuration.expirySweepInterval = nil
        let storage = try LocalStorage(configuration: configuration)
        var misses = 0
        for key in keys {
            let id = "k\(key)"
            if try await storage.fetch(Item.self, id: id) == nil {
                misses += 1
                try await storage.save(Item(id: id))
            }
        }
        return Double(misses) / Double(max(1, keys.count))
    }

    /// The miss ratio of ``AdaptiveCacheModel`` driven the same way (one commit per miss).
    static func modelMissRatio(_ keys: [Int], capacity: Int) -> Double {
        let model = AdaptiveCacheModel(capacity: capacity)
        var misses = 0
        for key in keys {
            let id = "k\(key)"
            if model.contains(id) {
                model.read(id)
            } else {
                misses += 1
                model.commit(writing: [id])
            }
        }
        return Double(misses) / Double(max(1, keys.count))
    }
}
