import CLMDB
import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// The store as an LMDB environment, its logger and its directory.
extension RecordTests {
    @Test func storeIsARealLMDBEnvironment() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(Product.sample(1), expiration: .hours(1))
        let names: [String] = try storage.core.environment.read { txn in
            try txn.withCursor(.main) { cursor in
                var names: [String] = []
                var entry = try cursor.move(MDB_FIRST)
                while let current = entry {
                    names.append(String(decoding: current.key, as: UTF8.self))
                    entry = try cursor.move(MDB_NEXT)
                }
                return names
            }
        }
        // Databases are named by the numbers meta allocates, never by user names (Product is type 1).
        let product = ["r.1", "u.1", "e.1", "s.1", "i.1.1", "i.1.2", "i.1.3"]
        #expect(Set(names) == Set(["meta", "changes", "counts", "leases"] + product))

        // LMDB's own tool reads it too (`make test` installs lmdb-utils).
        let tool = ["/usr/bin/mdb_stat", "/usr/local/bin/mdb_stat", "/opt/homebrew/bin/mdb_stat"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        let path = try #require(tool, "mdb_stat is not installed (lmdb-utils)")
        let (status, output) = try await runTool(path, ["-a", storage.core.directory.path])
        #expect(status == 0)
        for name in ["meta", "changes"] + product {
            #expect(output.contains("Status of \(name)"))
        }
    }

    @Test func loggerReceivesOperationDurations() async throws {
        final class Recorder: StorageLogger, @unchecked Sendable {
            let lock = NSLock()
            var operations: [String] = []
            func log(level: StorageLogLevel, message: String, metadata: [String: String]?) {}
            func record(duration: TimeInterval, operation: String) {
                lock.withLock { operations.append(operation) }
                #expect(duration >= 0)
            }
        }
        let recorder = Recorder()
        let storage = try LocalStorage(configuration: .inMemory, logger: recorder)
        try await storage.save(Note(id: "a", text: "t"))
        _ = try await storage.fetch(Note.self, id: "a")
        _ = try await storage.count(Note.self)
        let operations = recorder.lock.withLock { recorder.operations }
        #expect(operations == ["save", "fetch", "count"])
    }

    @Test func applicationSupportDirectoryCompiles() {
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = .applicationSupportDirectory
        #expect(!configuration.databaseDirectory.path.isEmpty)
        #expect(LocalStorageConfiguration.inMemory.isInMemory)
        #expect(LocalStorageConfiguration.default.durability == .full)
    }
}
