import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `compaction: .onOpen(whenFreeFractionExceeds:)`: a store that shrank gives its disk back when it opens
/// alone, keeps every record and its file mode, and is left alone while another process has it open or while
/// it has little free space.
@Suite struct CompactionTests {
    @Test func openingAStoreThatShrankGivesItsFreePagesBack() async throws {
        var store = ShrinkingStore(seed: 0xC0_4AC7)
        try await store.grow(3000, prefix: "a", thenDelete: 0.9)
        let before = store.dataFileIdentity
        let logger = CapturingLogger()
        try await withStore(store.configuration(compaction: .onOpen(whenFreeFractionExceeds: 0.5), logger: logger)) {
            storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        let after = store.dataFileIdentity
        #expect(after.size * 3 < before.size, "the file should have shrunk: \(before.size) → \(after.size) bytes")
        #expect(after.inode != before.inode, "the data file should have been replaced")
        #expect(
            logger.all.contains { $0.contains("Compacted the store") && $0.contains("bytesBefore=\(before.size)") },
            "logged: \(logger.all)")
        #expect(StoreFileModes.mode(of: store.dataFile.path) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: store.leftover.path))

        // Written to again, and opened again: nothing to give back now, the file stays.
        try await store.grow(200, prefix: "b", thenDelete: 0)
        let grown = store.dataFileIdentity
        try await withStore(store.configuration(compaction: .onOpen(whenFreeFractionExceeds: 0.5))) {
            storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        #expect(store.dataFileIdentity == grown)
    }

    /// LMDB's own compacting copy leaves out free pages but keeps the nearly empty ones that deletes leave: a store
    /// that shrank to a tenth, picked at random, kept a file several times that of a fresh store holding the same
    /// records (trial81 F1). The copy packs every tree: at most a fifth more than the fresh store (whose pages
    /// split as records came in), with the same records, indexes and counts.
    @Test func aStoreThatShrankIsCompactedToTheSizeOfAFreshOneHoldingItsRecords() async throws {
        func configuration(_ directory: URL, compaction: StorageCompaction = .never) -> LocalStorageConfiguration {
            var configuration = diskConfiguration(directory)
            configuration.compaction = compaction
            configuration.changeLogRetention = 100  // the change log of 38,000 changes is not what is compared
            return configuration
        }
        func dataFileSize(_ directory: URL) -> Int {
            var info = stat()
            let path = storeFilesDirectory(directory).appendingPathComponent("data.mdb").path
            return stat(path, &info) == 0 ? Int(info.st_size) : -1
        }
        var generator = SplitMix64(seed: 0xC0_4ACA)
        let records = (0..<20_000).map { n in
            StressRecord(
                id: "r-\(n)", group: "g\(n % 5)", sequence: n,
                blob: String(repeating: "x", count: 40 + Int(generator.next() % 80)))
        }
        let kept = records.filter { _ in generator.next() % 10 == 0 }
        let keptIDs = Set(kept.map(\.id))
        let (shrunk, fresh) = (temporaryDirectory(), temporaryDirectory())
        try await withStore(configuration(shrunk)) { storage async throws in
            try await storage.save(contentsOf: records)
            try await storage.write { tx in
                for record in records where !keptIDs.contains(record.id) {
                    try tx.delete(StressRecord.self, id: record.id)
                }
            }
        }
        try await withStore(configuration(fresh)) { storage async throws in try await storage.save(contentsOf: kept) }
        let before = dataFileSize(shrunk)
        try await withStore(configuration(shrunk, compaction: .onOpen(whenFreeFractionExceeds: 0.1))) {
            storage async throws in
            let stored = try await storage.fetch(StressRecord.self).sorted { $0.id < $1.id }
            #expect(stored == kept.sorted { $0.id < $1.id })
            for group in ["g0", "g1", "g4"] {
                let counted = try await storage.count(StressRecord.self, matching: [.equals("group", group)])
                #expect(counted == kept.filter { $0.group == group }.count)
            }
            #expect(try await verifyProblems(storage).isEmpty)
        }
        let (compacted, freshSize) = (dataFileSize(shrunk), dataFileSize(fresh))
        #expect(compacted < before)
        #expect(
            compacted <= freshSize + freshSize / 5,
            "compacted \(compacted) bytes (from \(before)), a fresh store of the same records \(freshSize)")
    }

    /// An open that the key check refuses (no key, or another key, for an encrypted store) compacted the data file
    /// first and threw after (trial73 #1); `localstorage compact` in place compacted an encrypted store without its
    /// key or with another (trial73 #2). Both leave the file as it was now; with the store's key both compact.
    @Test func anOpenOrACompactRefusedForItsKeyLeavesTheFileAsItWas() async throws {
        var store = ShrinkingStore(seed: 0xC0_4AC8)
        store.encryption = StorageEncryption(key: EncryptionTests.key)
        try await store.grow(2000, prefix: "a", thenDelete: 0.9)
        let before = store.dataFileIdentity
        for encryption in [nil, StorageEncryption(key: EncryptionTests.otherKey)] {
            var configuration = store.configuration(compaction: .onOpen(whenFreeFractionExceeds: 0.2))
            configuration.encryption = encryption
            #expect {
                _ = try LocalStorage(configuration: configuration)
            } throws: { error in
                guard case LocalStorageError.openFailed(_, let reason) = error else { return false }
                return reason.contains("key")
            }
            #expect(store.dataFileIdentity == before)
        }
        let wrongKey = try EncryptionCLITests.keyFile(EncryptionTests.otherKey).path
        for keyArguments in [[], ["--key-file", wrongKey]] {
            let refused = try await CLIResult.run(
                ["compact", "--store", store.directory.path] + keyArguments, environment: nil)
            #expect(refused.status == 1 && refused.stderr.contains("key"), "\(refused.stderr)")
            #expect(store.dataFileIdentity == before)
        }

        try await compactInPlaceWithTheKey(store, from: before)
        try await store.grow(1000, prefix: "b", thenDelete: 0.9)
        let grown = store.dataFileIdentity
        try await withStore(store.configuration(compaction: .onOpen(whenFreeFractionExceeds: 0.2))) {
            storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        #expect(store.dataFileIdentity.size * 2 < grown.size)
    }

    /// `localstorage compact` in place takes a plain store given a key, as every other command reads one (the key
    /// is checked when something seals with it), and compacts it; a key file that is no key is refused first.
    @Test func compactInPlaceOfAPlainStoreGivenAKeyCompactsIt() async throws {
        var store = ShrinkingStore(seed: 0x9_1A14)
        try await store.grow(2000, prefix: "a", thenDelete: 0.9)
        let before = store.dataFileIdentity
        let notAKey = temporaryDirectory().appendingPathComponent("short.key")
        try Data(repeating: 7, count: 5).write(to: notAKey)
        let refused = try await CLIResult.run(
            ["compact", "--store", store.directory.path, "--key-file", notAKey.path], environment: nil)
        #expect(refused.status != 0)
        #expect(store.dataFileIdentity == before)
        try await compactInPlaceWithTheKey(store, from: before)
        try await withStore(store.configuration()) { storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
    }

    /// `localstorage compact` of `store` in place with `EncryptionTests.key` succeeds and gives back most of a file
    /// that was `before`.
    private func compactInPlaceWithTheKey(
        _ store: ShrinkingStore, from before: (size: Int, inode: UInt64)
    )
        async throws
    {
        let compacted = try await CLIResult.run(
            [
                "compact", "--store", store.directory.path, "--key-file",
                try EncryptionCLITests.keyFile(EncryptionTests.key).path,
            ], environment: nil)
        #expect(compacted.status == 0, "\(compacted.stderr)")
        #expect(store.dataFileIdentity.size * 3 < before.size)
    }

    /// The open leaves a type's root pages to the type's first use, but a compaction copies every tree inside
    /// LMDB: it checks every root first, and a damaged one leaves the store as it was, open and uncompacted.
    @Test func aDamagedRootPageOfATypeLeavesTheStoreUncompacted() async throws {
        var store = ShrinkingStore(seed: 0xDA4A6E)
        try await store.grow(3000, prefix: "a", thenDelete: 0.9)
        let root = try await withStore(store.configuration()) { storage async throws -> UInt64 in
            try storage.core.environment.read { txn -> UInt64 in
                let info = try #require(try TypeRegistry.info(named: "StressRecord", meta: storage.core.meta, txn: txn))
                let record = try #require(try txn.get(Database(handle: 1), key: Array("r.\(info.number)".utf8)))
                return DatabaseRecord(Array(record), at: 0).root
            }
        }
        var bytes = try Data(contentsOf: store.dataFile)
        let flags = Int(root) * Int(sysconf(Int32(_SC_PAGESIZE))) + 10
        bytes[flags] = 0  // Neither a leaf nor a branch page.
        bytes[flags + 1] = 0
        try bytes.write(to: store.dataFile)
        let before = store.dataFileIdentity
        let logger = CapturingLogger()
        try await withStore(store.configuration(compaction: .onOpen(whenFreeFractionExceeds: 0.5), logger: logger)) {
            storage async throws -> Void in
            await #expect(throws: LocalStorageError.self) { try await storage.count(StressRecord.self) }
        }
        #expect(store.dataFileIdentity == before, "the damaged file should have been left as it was")
        #expect(
            logger.all.contains { $0.contains("Compaction failed") && $0.contains("damaged at page \(root)") },
            "logged: \(logger.all)")
    }

    @Test func theCompactedFileKeepsTheStoresMode() async throws {
        var store = ShrinkingStore(seed: 7)
        var configuration = store.configuration()
        configuration.filePermissions = 0o640
        try await withStore(configuration) { storage in try await storage.save(StressRecord.make(id: "x", sequence: 1))
        }
        try await store.grow(1500, prefix: "a", thenDelete: 0.95)
        store.model["x"] = StressRecord.make(id: "x", sequence: 1)
        let before = store.dataFileIdentity
        configuration.compaction = .onOpen(whenFreeFractionExceeds: 0.5)
        try await withStore(configuration) { storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        #expect(store.dataFileIdentity.inode != before.inode)
        #expect(StoreFileModes.mode(of: store.dataFile.path) == 0o640)
        #expect(StoreFileModes.mode(of: store.files.appendingPathComponent(StoreOpenLock.fileName).path) == 0o640)
    }

    @Test func aStoreWithLittleFreeSpaceIsNotCompacted() async throws {
        var store = ShrinkingStore(seed: 11)
        try await store.grow(2000, prefix: "a", thenDelete: 0.1)
        let before = store.dataFileIdentity
        let logger = CapturingLogger()
        var configuration = store.configuration(compaction: .onOpen(whenFreeFractionExceeds: 0.5), logger: logger)
        configuration.logger = logger
        try await withStore(configuration) { storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        #expect(store.dataFileIdentity == before, "the data file should be untouched")
        #expect(logger.all.contains { $0.contains("Compaction not needed") }, "logged: \(logger.all)")
        #expect(!logger.all.contains { $0.contains("Compacted") })
        // The default never compacts, however much is free.
        try await store.grow(0, prefix: "none", thenDelete: 0.95)
        let shrunk = store.dataFileIdentity
        try await withStore(store.configuration()) { storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        #expect(store.dataFileIdentity == shrunk)
    }

    /// Another process of the library (it holds the store's own lock), and then a process that holds only
    /// LMDB's lock on `lock.mdb`: neither may see the file swapped under it.
    @Test func compactionWaitsUntilNoOtherProcessHasTheStoreOpen() async throws {
        var store = ShrinkingStore(seed: 23)
        try await store.grow(3000, prefix: "a", thenDelete: 0.9)
        let before = store.dataFileIdentity
        let compacting = store.configuration(compaction: .onOpen(whenFreeFractionExceeds: 0.5))

        let app = try HelperProcess(["overwrite", store.directory.path], withInput: true)
        try await app.waitForLine("ready") { $0 == "ready" }
        let busyLogger = CapturingLogger()
        var whileBusy = compacting
        whileBusy.logger = busyLogger
        try await withStore(whileBusy) { storage async throws in #expect(try await store.differences(storage).isEmpty)
        }
        #expect(store.dataFileIdentity == before, "compacted while another process had the store open")
        // The skip is logged, with the free fraction it would have compared.
        #expect(
            busyLogger.all.contains { $0.contains("Compaction skipped") && $0.contains("its open lock") },
            "logged: \(busyLogger.all)")
        #expect(try await app.ask("save other-1 1") == "ok")
        await app.kill()
        store.model["other-1"] = StressRecord.make(id: "other-1", sequence: 1)

        let lockHolder = try HelperProcess(["hold-lock", store.files.appendingPathComponent("lock.mdb").path])
        try await lockHolder.waitForLine("locked") { $0 == "locked" }
        let logger = CapturingLogger()
        var configuration = compacting
        configuration.logger = logger
        try await withStore(configuration) { storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        #expect(store.dataFileIdentity.inode == before.inode, "compacted while a process held LMDB's lock")
        #expect(logger.all.contains { $0.contains("Compaction skipped") && $0.contains("another process") })
        await lockHolder.kill()

        // A process reading with plain LMDB: seen in the reader table before the store is closed to compact.
        let reader = try HelperProcess(["hold-readers", store.files.path, "1"])
        try await reader.waitForLine("holding") { $0.hasPrefix("holding") }
        let readerLogger = CapturingLogger()
        configuration.logger = readerLogger
        try await withStore(configuration) { storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        #expect(store.dataFileIdentity.inode == before.inode, "compacted while a process was reading")
        #expect(
            readerLogger.all.contains { $0.contains("pid \(reader.processIdentifier)") && $0.contains("reader table") },
            "\(readerLogger.all.filter { $0.contains("Compaction") })")
        await reader.kill()

        // Alone at last.
        try await withStore(compacting) { storage async throws in #expect(try await store.differences(storage).isEmpty)
        }
        #expect(store.dataFileIdentity.size * 3 < before.size)
    }

    /// A process that compacts while this one has the store open would swap the file under it: this
    /// process's open store keeps another from compacting, and a child's compaction is seen by the
    /// next open here.
    @Test func aChildProcessCompactsOnlyWhenThisProcessHasClosedTheStore() async throws {
        var store = ShrinkingStore(seed: 31)
        try await store.grow(3000, prefix: "a", thenDelete: 0.9)
        let before = store.dataFileIdentity
        try await withStore(store.configuration()) { storage async throws in
            let child = try HelperProcess(["compact-open", store.directory.path, "0.5"])
            #expect(await child.waitForExit() == 0, "\(child.lines)")
            #expect(!child.lines.contains { $0.hasPrefix("step") }, "\(child.lines)")
            #expect(store.dataFileIdentity == before)
            #expect(try await store.differences(storage).isEmpty)
        }
        let child = try HelperProcess(["compact-open", store.directory.path, "0.5"])
        #expect(await child.waitForExit() == 0, "\(child.lines)")
        #expect(child.lines.contains("step folder synced"), "\(child.lines)")
        #expect(store.dataFileIdentity.size * 3 < before.size)
        try await withStore(store.configuration()) { storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
    }
}
