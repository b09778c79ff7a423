import Foundation
import LocalStorageTestSupport

@testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A store on disk and the records it should hold, for the compaction tests.
struct ShrinkingStore {
    let directory = temporaryDirectory()
    /// What the store holds, by id.
    var model: [String: StressRecord] = [:]
    var generator: SplitMix64
    /// The store's key, if it is encrypted.
    var encryption: StorageEncryption?

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    /// The store's configuration, without compaction unless asked.
    func configuration(
        compaction: StorageCompaction = .never, logger: (any StorageLogger)? = nil
    )
        -> LocalStorageConfiguration
    {
        var configuration = diskConfiguration(directory)
        configuration.compaction = compaction
        configuration.logger = logger
        configuration.encryption = encryption
        return configuration
    }

    /// The folder of the store's files.
    var files: URL { storeFilesDirectory(directory) }
    var dataFile: URL { files.appendingPathComponent("data.mdb") }
    var leftover: URL { files.appendingPathComponent(DataFileCompactor.temporaryName) }

    /// The data file's size and inode (a compaction replaces the file, so its inode changes).
    var dataFileIdentity: (size: Int, inode: UInt64) {
        var info = stat()
        guard stat(dataFile.path, &info) == 0 else { return (-1, 0) }
        return (Int(info.st_size), UInt64(info.st_ino))
    }

    /// Saves `count` records of random sizes named `prefix-N`, then deletes `deleteFraction` of every
    /// record the store holds, picked at random; the model follows.
    mutating func grow(_ count: Int, prefix: String, thenDelete deleteFraction: Double) async throws {
        let configuration = configuration()
        var batch: [StressRecord] = []
        for n in 0..<count {
            let size = 200 + Int(generator.next() % 3000)
            batch.append(
                StressRecord(
                    id: "\(prefix)-\(n)", group: "g\(n % 5)", sequence: n,
                    blob: String(repeating: Character(UnicodeScalar(UInt8(97 + n % 26))), count: size)))
        }
        for record in batch { model[record.id] = record }
        var chosen: [String] = []
        for id in model.keys.sorted() where Double(generator.next() % 1000) < deleteFraction * 1000 {
            chosen.append(id)
        }
        let doomed = chosen
        for id in doomed { model[id] = nil }
        try await withStore(configuration) { storage in
            for start in stride(from: 0, to: batch.count, by: 500) {
                try await storage.save(contentsOf: Array(batch[start..<min(batch.count, start + 500)]))
            }
            try await storage.write { tx in
                for id in doomed { try tx.delete(StressRecord.self, id: id) }
            }
        }
    }

    /// The differences between the store and the model (empty when they agree), and `verify`'s problems.
    func differences(_ storage: LocalStorage) async throws -> [String] {
        var found: [String] = []
        let stored = try await storage.fetch(StressRecord.self)
        let byId = Dictionary(stored.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for (id, record) in model where byId[id] != record { found.append("missing or changed: \(id)") }
        for id in byId.keys where model[id] == nil { found.append("unexpected: \(id)") }
        let inGroup = try await storage.count(StressRecord.self, matching: [.equals("group", "g1")])
        let expected = model.values.filter { $0.group == "g1" }.count
        if inGroup != expected { found.append("group g1: \(inGroup) indexed, \(expected) expected") }
        return found + (try await verifyProblems(storage))
    }
}
