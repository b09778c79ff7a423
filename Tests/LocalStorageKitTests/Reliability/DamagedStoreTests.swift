import CLMDB
import Foundation
import Testing

@testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bad data on disk: damaged records fail alone; damaged or foreign files fail at open with a clear
/// `LocalStorageError`, never a crash.
struct DamagedStoreTests {
    /// Replaces the stored bytes of one record, leaving its index entries in place.
    private func overwrite(_ id: String, with bytes: [UInt8], in storage: LocalStorage) async throws {
        let schema = try await storage.core.schema(for: Product.self)
        try await storage.core.writer.perform { context in
            try context.txn.put(schema.records, key: Array(id.utf8), value: bytes)
        }
    }

    /// A valid header (as the record had) followed by `payload`.
    private func validHeader(of id: String, in storage: LocalStorage, payload: [UInt8]) async throws -> [UInt8] {
        let schema = try await storage.core.schema(for: Product.self)
        return try storage.core.environment.read { txn in
            guard let bytes = try txn.get(schema.records, key: Array(id.utf8)) else { return [] }
            return try RecordView(bytes).header(in: schema, txn: txn).serialized(payload: payload)
        }
    }

    enum Damage: String, CaseIterable, Sendable {
        case garbageHeader, truncatedHeader, headerLengthPastTheEnd, unknownFormat, garbagePayload
        case emptyPayload, wrongShapePayload
    }

    @Test(arguments: Damage.allCases)
    func aDamagedRecordFailsAloneAndQueriesThatMeetItNameIt(damage: Damage) async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<10).map(Product.sample))
        let victim = "sku_4"
        var header = try await validHeader(of: victim, in: storage, payload: [])
        let bytes: [UInt8]
        switch damage {
        case .garbageHeader: bytes = (0..<80).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }
        case .truncatedHeader: bytes = Array(header.prefix(20))
        case .headerLengthPastTheEnd:
            header[2] = 0xFF
            header[3] = 0x7F
            bytes = header
        case .unknownFormat:
            header[1] = 0  // No format: damage (a format number this version does not know is a newer version's)
            bytes = header + Array("{}".utf8)
        case .garbagePayload: bytes = header + [0xFF, 0x00, 0x7B, 0x22, 0xC3]
        case .emptyPayload: bytes = header
        case .wrongShapePayload: bytes = header + Array(#"{"id":"sku_4","title":42}"#.utf8)
        }
        try await overwrite(victim, with: bytes, in: storage)

        // fetch(id) of the damaged record reports it, naming the type and the id…
        await #expect(throws: LocalStorageError.self) { try await storage.fetch(Product.self, id: victim) }
        do {
            _ = try await storage.fetch(Product.self, id: victim)
        } catch let LocalStorageError.decodingFailed(reason) {
            #expect(reason.contains("Product \"\(victim)\""), "\(reason)")
        }
        // …every other record reads as before…
        for n in [0, 3, 5, 9] {
            #expect(try await storage.fetch(Product.self, id: "sku_\(n)") == Product.sample(n))
        }
        // …and listings, queries and pages that meet it say so, naming it, instead of leaving it out.
        func expectNamed(_ what: String, _ body: () async throws -> Void) async {
            do {
                try await body()
                Issue.record("\(what) (\(damage)): no error")
            } catch LocalStorageError.decodingFailed(let reason) {
                #expect(reason.contains("Product \"\(victim)\""), "\(what): \(reason)")
            } catch {
                Issue.record("\(what) (\(damage)): threw \(error)")
            }
        }
        await expectNamed("listing") { _ = try await storage.fetch(Product.self) }
        await expectNamed("newest first") {
            _ = try await storage.fetch(Product.self, options: FetchOptions(sort: .newestFirst))
        }
        await expectNamed("query") {
            _ = try await storage.fetch(
                Product.self, matching: [.atLeast("price", 0.0)], orderedBy: .ascending("price"))
        }
        await expectNamed("query by id") {
            _ = try await storage.fetch(Product.self, matching: [.atLeast("price", 0.0)])
        }
        await expectNamed("page") {
            _ = try await storage.page(Product.self, orderedBy: .ascending("rating"), page: 1, pageSize: 20)
        }
        // A count that reads the record's header meets a damaged header; counts never decode payloads.
        let headerDamaged = [.garbageHeader, .truncatedHeader, .headerLengthPastTheEnd].contains(damage)
        if headerDamaged {
            await expectNamed("count reading headers") {
                _ = try await storage.count(
                    Product.self, matching: [.atLeast("price", 0.0), .equals("category", "electronics")])
            }
        }
        // Queries that do not meet it are untouched.
        let others = try await storage.fetch(Product.self, matching: [.equals("category", "books")])
        #expect(others.map(\.id) == ["sku_0", "sku_3", "sku_6", "sku_9"])
        // The count of the type reads keys only: the damaged record is still counted.
        #expect(try await storage.count(Product.self) == 10)

        // It can be deleted or replaced, and the store is writable.
        try await storage.save(Product.sample(4))
        #expect(try await storage.fetch(Product.self, id: victim) == Product.sample(4))
        try await storage.delete(Product.self, id: victim)
        #expect(try await storage.fetch(Product.self, id: victim) == nil)
    }

    @Test func verifyReportsADamagedHeader() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: (0..<3).map(Product.sample))
        #expect(try await verifyProblems(storage).isEmpty)
        try await overwrite("sku_1", with: [0xA7, 1, 2, 3], in: storage)
        let problems = try await verifyProblems(storage)
        #expect(problems.contains { $0.contains("sku_1") })
    }

    // MARK: - Files that are not a healthy store

    private func makeStoreDirectory() throws -> (URL, URL) {
        let directory = temporaryDirectory()
        let files = storeFilesDirectory(directory)
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        return (directory, files)
    }

    @Test(arguments: [16, 4096, 12_000])
    func aDataFileThatIsNotLMDBFailsToOpen(length: Int) throws {
        let (directory, files) = try makeStoreDirectory()
        let garbage = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: files.appendingPathComponent("data.mdb"))
        expectOpenFailed(directory, mentioning: ["not an LMDB store"])
    }

    @Test func aSQLiteFileInPlaceOfTheDataFileFailsToOpen() throws {
        let (directory, files) = try makeStoreDirectory()
        var header = Array("SQLite format 3\0".utf8)
        header += [UInt8](repeating: 0, count: 8192 - header.count)
        try Data(header).write(to: files.appendingPathComponent("data.mdb"))
        expectOpenFailed(directory, mentioning: ["not an LMDB store"])
    }

    @Test func aDirectoryInPlaceOfTheDataFileFailsToOpen() throws {
        let (directory, files) = try makeStoreDirectory()
        try FileManager.default.createDirectory(
            at: files.appendingPathComponent("data.mdb"),
            withIntermediateDirectories: true)
        expectOpenFailed(directory, mentioning: ["directory", "Is a directory", "mdb_env_open"])
    }

    @Test func aFileInPlaceOfTheStoreDirectoryFailsToOpen() throws {
        let directory = temporaryDirectory()
        try Data("not a directory".utf8).write(to: storeFilesDirectory(directory))
        expectOpenFailed(directory, mentioning: ["directory", "exist", "file"])
    }

    @Test(arguments: [0.25, 0.5, 0.9])
    func aTruncatedDataFileFailsToOpen(fraction: Double) async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage in
            try await storage.save(contentsOf: (0..<3000).map(Product.sample))
        }
        let data = storeFilesDirectory(directory).appendingPathComponent("data.mdb")
        let bytes = try Data(contentsOf: data)
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        try bytes.prefix(max(2 * pageSize + 100, Int(Double(bytes.count) * fraction))).write(to: data)
        expectOpenFailed(directory, mentioning: ["truncated"])
    }

    @Test func anEmptiedDataFileOpensAsAnEmptyStore() async throws {
        // LMDB treats an empty data file as a new store; documented, not an error.
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage in
            try await storage.save(Product.sample(1))
        }
        try Data().write(to: storeFilesDirectory(directory).appendingPathComponent("data.mdb"))
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try await storage.count(Product.self) == 0)
        }
    }

    /// A lock file in use by a process of another LMDB build (another lock format) or a file that is no
    /// LMDB lock file at all. While another process holds it, LMDB must check and refuse it; when no
    /// process uses it, LMDB rebuilds it and the store opens.
    @Test(arguments: [true, false])
    func aForeignLockFileInUseFailsToOpen(sameMagic: Bool) async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage in
            try await storage.save(Product.sample(1))
        }
        let lock = storeFilesDirectory(directory).appendingPathComponent("lock.mdb")
        var bytes = [UInt8](repeating: 0xEE, count: 8192)
        if sameMagic {
            // LMDB's magic, then a lock format no build of ours writes.
            bytes.replaceSubrange(0..<8, with: [0xDE, 0xC0, 0xEF, 0xBE, 0x7F, 0x7F, 0x7F, 0x7F])
        }
        try Data(bytes).write(to: lock)
        let holder = try HelperProcess(["hold-lock", lock.path])
        try await holder.waitForLine("the lock") { $0 == "locked" }
        expectOpenFailed(directory, mentioning: sameMagic ? ["incompatible LMDB version"] : ["not an LMDB store"])
        await holder.kill()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try await storage.fetch(Product.self, id: "sku_1") == Product.sample(1))
        }
    }

    @Test func aReadOnlyDirectoryFailsToOpen() async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage in
            try await storage.save(Product.sample(1))
        }
        let files = storeFilesDirectory(directory)
        let empty = temporaryDirectory()
        for path in [
            files.path, files.appendingPathComponent("data.mdb").path,
            files.appendingPathComponent("lock.mdb").path, empty.path,
        ] {
            chmod(path, path.hasSuffix(".mdb") ? 0o444 : 0o555)
        }
        defer {
            for path in [files.path, empty.path] { chmod(path, 0o755) }
        }
        // Run by a process that permissions apply to (tests often run as root, which ignores them).
        for target in [directory, empty] {
            let helper = try HelperProcess(["open", target.path, "--as-nobody"])
            #expect(await helper.waitForExit() == 1)
            let line = helper.lines.last ?? ""
            #expect(line.hasPrefix("LocalStorageError: Cannot open the store"), "\(line)")
            #expect(line.contains("ermission"), "\(line)")
        }
    }
}
