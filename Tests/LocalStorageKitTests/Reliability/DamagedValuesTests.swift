import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// Numbers read from disk, from a server or from a caller that arithmetic could overflow on: each gets an
/// error or a bounded value, never a trap (found by an audit of the integer conversions on these paths).
@Suite struct DamagedValuesTests {
    /// A meta page whose last page number is 2⁶⁴ − 1 (so that "pages + 1" wraps to 0) used to pass the
    /// check of usable meta pages and then trap in the walk: at every open, in `verify` and in a salvage.
    @Test(arguments: [false, true])
    func aMetaPageNamingEveryPossiblePageIsDamagedNotATrap(bothMetaPages: Bool) async throws {
        let directory = try await storeWithMetaPages { newest in
            (bothMetaPages ? [0, 1] : [newest]).map { ($0, 136, [UInt8](repeating: 0xFF, count: 8)) }
        }

        #expect(throws: LocalStorageError.self) { _ = try LocalStorage(configuration: diskConfiguration(directory)) }
        do {
            let maintenance = try await StoreMaintenance(directory: storeFilesDirectory(directory))
            let report = try maintenance.verify()
            #expect(!report.isClean)
        } catch let error as LocalStorageError {
            // The maintenance tool may refuse the file outright: an error, not a trap, either way.
            #expect("\(error)".contains("damaged") || "\(error)".contains("meta"), "\(error)")
        }
    }

    /// A meta page whose transaction id is 2⁶³ or more (LMDB's `size_t`, which Swift sees as a negative `Int`)
    /// trapped the open's page check; one whose page size is 0 made LMDB divide by zero in `mdb_env_open`
    /// (SIGFPE). Each now opens or fails with a `LocalStorageError`, and `verify` runs.
    @Test(arguments: [(144, [0, 0, 0, 0, 0, 0, 0, 0x80] as [UInt8]), (40, [0, 0, 0, 0])])
    func aMetaPageFieldLMDBTrustsIsCheckedFirst(offset: Int, bytes: [UInt8]) async throws {
        let directory = try await storeWithMetaPages { newest in [(newest, offset, bytes)] }

        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            #expect(try await storage.fetch(Product.self, id: "sku_3") == Product.sample(3))
        } catch let error as LocalStorageError {
            guard case .openFailed = error else {
                Issue.record("expected openFailed, got \(error)")
                return
            }
        }
        do {
            _ = try await StoreMaintenance(directory: storeFilesDirectory(directory)).verify()
        } catch is LocalStorageError {
            // Refusing the file is fine; trapping is not.
        }
    }

    /// A closed store of 20 products whose meta pages got `changes(newest meta page's number)`: bytes at an
    /// offset of a meta page; returns its `databaseDirectory`.
    private func storeWithMetaPages(
        _ changes: (Int) -> [(page: Int, offset: Int, bytes: [UInt8])]
    ) async throws -> URL {
        let directory = temporaryDirectory()
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            try await storage.save(contentsOf: (0..<20).map(Product.sample))
        }
        let path = storeFilesDirectory(directory).appendingPathComponent("data.mdb").path
        let (_, newest) = try walkDataFile(path)
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        for change in changes(newest.number) {
            try handle.seek(toOffset: UInt64(change.page * newest.pageSize + change.offset))
            handle.write(Data(change.bytes))
        }
        try handle.close()
        return directory
    }

    /// A counter of the count tree whose top bit is set used to trap `Int(UInt64)` in every save that
    /// adjusted it, in counts and in `verify`. It is now capped: counts are wrong until a repair, and
    /// `verify` says so.
    @Test func aDamagedCounterIsReportedNotATrap() async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(contentsOf: (0..<50).map(Product.sample))
            let schema = try await storage.core.schema(for: Product.self)
            let counts = try #require(schema.counts)
            try await storage.core.writer.perform { context in
                var keys: [[UInt8]] = []
                try context.txn.withCursor(counts) { cursor in
                    var entry = try cursor.move(.first)
                    while let current = entry {
                        keys.append(Array(current.key))
                        entry = try cursor.move(.next)
                    }
                }
                for key in keys { try context.txn.put(counts, key: key, value: [UInt8](repeating: 0xFF, count: 8)) }
            }
            try await storage.save(Product.sample(50))
            try await storage.delete(Product.self, id: "sku_3")
            let counted = try await storage.count(Product.self, matching: [.between("price", 0...1_000_000)])
            #expect(counted >= 0)
            _ = try await storage.page(
                Product.self, matching: [.atLeast("price", 0)], orderedBy: .ascending("price"), page: 2, pageSize: 5)
            let maintenance = try await StoreMaintenance(directory: storage.core.directory)
            #expect(try !maintenance.verify().isClean)
            #expect(try await maintenance.repair().isClean)
            #expect(try await storage.count(Product.self, matching: [.between("price", 0...1_000_000)]) == 50)
        }
    }

    /// Saves `sku_1`, then puts a key of `length` 0xFF bytes after every entry of the change log (damage).
    private static func saveOneAndEndTheChangeLog(_ storage: LocalStorage, withKeyOf length: Int) async throws {
        try await storage.save(Product.sample(1))
        let changes = storage.core.changeLog.database
        try await storage.core.writer.perform { context in
            try context.txn.put(changes, key: [UInt8](repeating: 0xFF, count: length), value: [0])
        }
    }

    /// The last sequence of the change log at 2⁶⁴ − 1 (a damaged key) made every commit trap adding one.
    @Test func aDamagedChangeLogSequenceFailsWritesWithAnError() async throws {
        try await withStore(diskConfiguration()) { storage async throws in
            try await Self.saveOneAndEndTheChangeLog(storage, withKeyOf: 8)
            let reason = await decodingFailure { try await storage.save(Product.sample(2)) }
            #expect(reason?.contains("change log") == true, "\(reason ?? "no error")")
            #expect(try await storage.fetch(Product.self, id: "sku_1") == Product.sample(1))
        }
    }

    /// A key of another length after the change log's sequences (damage): new entries cannot go in at the end
    /// (`MDB_APPEND` would refuse them), so they are put in their place and the writes go on.
    /// Also for a batch of more changes than the log keeps, whose older entries go before it writes its own.
    @Test(arguments: [nil, 10])
    func aForeignKeyAtTheEndOfTheChangeLogDoesNotStopWrites(retention: Int?) async throws {
        var configuration = diskConfiguration()
        if let retention { configuration.changeLogRetention = retention }
        try await withStore(configuration) { storage async throws in
            try await Self.saveOneAndEndTheChangeLog(storage, withKeyOf: 9)
            let log = storage.core.changeLog
            let before = try storage.core.environment.read { try log.lastSequence(in: $0) }
            try await storage.save(Product.sample(2))
            // The sequences go on after the foreign key: the next commit's entry is not written over the first.
            #expect(before > 0)
            #expect(try storage.core.environment.read { try log.lastSequence(in: $0) } == before + 1)
            try await storage.save(contentsOf: (3..<40).map(Product.sample))
            #expect(try await storage.count(Product.self) == 39)
            #expect(try await storage.fetch(Product.self, id: "sku_2") == Product.sample(2))
        }
    }

    /// A damaged type description whose largest slot number is UInt32.max: a new index gets a number that
    /// no slot has, instead of a trap adding one.
    @Test func aNewSlotAfterTheLargestPossibleNumberIsStillNew() {
        let info = TypeInfo(
            name: "T", number: 1, indexes: [], signature: 0, version: 1,
            slots: [
                .init(name: "a", kind: .string, number: 1), .init(name: "b", kind: .number, number: UInt32.max),
            ],
            declarations: [])
        let declaration = IndexDeclaration(entries: [.init(name: "c", kind: .string)])
        let registered = TypeRegistry.registering(declaration, in: info)
        let numbers = registered.slots.map(\.number)
        #expect(numbers.count == 3)
        #expect(Set(numbers).count == 3)
        #expect(!numbers.contains(0))
    }

    /// `localstorage list --offset 9223372036854775807 --limit 1` trapped adding the two.
    @Test func aListingPastEveryRecordIsEmpty() async throws {
        try await withStore(diskConfiguration()) { storage async throws in
            try await storage.save(contentsOf: (0..<5).map(Product.sample))
            let maintenance = try await StoreMaintenance(directory: storage.core.directory)
            let far = try maintenance.list("Product", query: ListQuery(limit: 1, offset: Int.max))
            #expect(far.records.isEmpty)
            let ordered = ListQuery(limit: Int.max, offset: 3, order: .init(index: "price", isDescending: false))
            #expect(try maintenance.list("Product", query: ordered).records.count == 2)
            let matching = ListQuery(
                limit: Int.max, offset: Int.max - 1, conditions: [.init(index: "category", value: "books")])
            #expect(try maintenance.list("Product", query: matching).records.isEmpty)
            #expect(throws: MaintenanceError.self) {
                try maintenance.list("Product", query: ListQuery(offset: -1))
            }
        }
    }

    /// An import line with more index values than a declaration can hold is refused with its line number
    /// (65,536 of them trapped converting the count to the header's UInt16).
    @Test func anImportLineWithMoreIndexValuesThanADeclarationHoldsIsRefused() async throws {
        let source = temporaryDirectory()
        let file = source.appendingPathComponent("export.jsonl")
        var lines: [String] = []
        try await withStore(diskConfiguration(source)) { storage async throws in
            try await storage.save(Product.sample(1))
            let maintenance = try await StoreMaintenance(directory: storage.core.directory)
            var data = Data()
            _ = try maintenance.export(to: { data.append($0) })
            lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        let recordLine = try #require(lines.firstIndex { $0.contains("\"sku_1\"") })
        var record = try #require(
            try JSONSerialization.jsonObject(with: Data(lines[recordLine].utf8)) as? [String: Any])
        record["signature"] = 12_345
        record["indexes"] = Dictionary(uniqueKeysWithValues: (0..<65).map { ("extra\($0)", "v") })
        lines[recordLine] = String(decoding: try JSONSerialization.data(withJSONObject: record), as: UTF8.self)
        try Data(lines.joined(separator: "\n").utf8).write(to: file)

        try await withStore(diskConfiguration()) { storage async throws in
            let maintenance = try await StoreMaintenance(directory: storage.core.directory)
            do {
                _ = try await maintenance.importRecords(from: file, checkingPayloadValues: false)
                Issue.record("the import was accepted")
            } catch MaintenanceError.invalidImportLine(let line, let reason) {
                #expect(line == recordLine + 1)
                #expect(reason.contains("at most 64"), "\(reason)")
            }
            #expect(try await storage.count(Product.self) == 0)
        }
    }

    /// A timeout of `.seconds(Int64.max)` ("no timeout") trapped multiplying by 1,000 for `poll(2)`.
    @Test func anyTimeoutConvertsToPollMilliseconds() {
        #expect(Duration.seconds(Int64.max).pollMilliseconds == Int32.max)
        #expect(Duration.seconds(3_000_000).pollMilliseconds == Int32.max)
        #expect(Duration.seconds(-5).pollMilliseconds == 1)
        #expect(Duration.zero.pollMilliseconds == 1)
        #expect(Duration.milliseconds(1_500).pollMilliseconds == 1_500)
        #expect(Duration.microseconds(1).pollMilliseconds == 1)
    }

    /// RESP3 attributes in a row used to recurse without counting depth: a server could overflow the stack.
    @Test func attributesWithoutEndMeetTheDepthLimit() throws {
        var parser = RESPParser()
        let wire = String(repeating: "|0\r\n", count: RESPParser.maxDepth + 2) + ":1\r\n"
        Array(wire.utf8).withUnsafeBytes { parser.append($0) }
        #expect(throws: RESPParser.Failure.self) { try parser.next() }

        var one = RESPParser()
        Array("|1\r\n+key\r\n+value\r\n:7\r\n".utf8).withUnsafeBytes { one.append($0) }
        #expect(try one.next() == .integer(7))
    }

    /// A compressed payload whose frame claims more than 32,768 times its size is damaged: it is refused
    /// before anything is allocated for it (a few bytes could ask for 2 GiB).
    @Test func aFrameClaimingAnImpossibleSizeIsDamaged() throws {
        // Dictionary id 0; zstd magic; a single-segment frame header with a 4-byte content size of 2³¹ − 1;
        // one last raw block of one byte.
        let frame: [UInt8] =
            [0, 0, 0, 0] + [0x28, 0xB5, 0x2F, 0xFD] + [0xA0] + [0xFF, 0xFF, 0xFF, 0x7F] + [0x09, 0x00, 0x00] + [0x41]
        #expect(PayloadCompressor.plausibleContentSize(UInt64(Int32.max), frameBytes: frame.count - 4) == false)
        // (The old code returned nil too, after allocating 2 GiB: only the size check above tells them apart.)
        #expect(PayloadCompressor.decompress(frame, dictionaries: nil) == nil)
    }

    /// What zstd really writes always passes the size check, however well it compresses: a megabyte of one
    /// letter (RLE blocks, close to the bound) is stored compressed and read back.
    @Test func theBestCompressedPayloadStillReadsBack() async throws {
        var configuration = diskConfiguration()
        configuration.compression = .zstd()
        try await withStore(configuration) { storage async throws in
            let note = Note(id: "runs", text: String(repeating: "a", count: 1 << 20))
            try await storage.save(note)
            let size = try #require(try await storage.metadata(Note.self, id: "runs")?.sizeInBytes)
            #expect(size < 1_000, "stored \(size) bytes: not compressed")
            #expect(try await storage.fetch(Note.self, id: "runs") == note)
        }
    }
}
