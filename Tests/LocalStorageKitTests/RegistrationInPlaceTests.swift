import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// Record types that differ only by their storage name, so a test can register several at once.
protocol CellTag: Sendable { static var name: String { get } }
enum CellA: CellTag { static let name = "A" }
enum CellB: CellTag { static let name = "B" }
enum CellC: CellTag { static let name = "C" }
enum CellD: CellTag { static let name = "D" }
enum CellE: CellTag { static let name = "E" }
enum CellF: CellTag { static let name = "F" }
enum CellG: CellTag { static let name = "G" }
enum CellH: CellTag { static let name = "H" }

struct Cell<Tag: CellTag>: LocalStorageIndexed, Equatable {
    let id: String
    var group: Int
    var label: String

    static var storageName: String { "Cell" + Tag.name }
    static var storageIndexes: [StorageIndex<Self>] {
        [StorageIndex("group", \.group), StorageIndex("label", \.label)]
    }
}

/// The same stored type as ``Cell<CellA>`` with one index fewer: a declaration `meta` does not hold as its
/// newest, so its first use writes `meta`.
struct NarrowCellA: LocalStorageIndexed, Equatable {
    let id: String
    var group: Int
    var label: String

    static var storageName: String { "CellA" }
    static var storageIndexes: [StorageIndex<Self>] { [StorageIndex("group", \.group)] }
}

/// A type that `meta` already describes with the same declaration is registered at its first use after an
/// open in a read transaction on the caller's thread, with no commit; anything else still goes through the
/// writer. Both kinds of registration may run at once with writes.
@Suite struct RegistrationInPlaceTests {
    private static func cells<Tag: CellTag>(_ tag: Tag.Type, count: Int, round: Int) -> [Cell<Tag>] {
        (0..<count).map { Cell<Tag>(id: "\(Tag.name)-\($0)", group: ($0 + round) % 5, label: "r\(round)-\($0)") }
    }

    @Test func aTypeMetaDescribesOpensWithoutACommitAndAnythingElseCommits() async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(contentsOf: Self.cells(CellA.self, count: 20, round: 0))
        }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            let commits = storage.core.writer.commitCount
            #expect(try await storage.fetch(Cell<CellA>.self, id: "A-3") == Cell(id: "A-3", group: 3, label: "r0-3"))
            #expect(try await storage.count(Cell<CellA>.self, matching: [.equals("group", 2)]) == 4)
            #expect(
                try await storage.fetch(Cell<CellA>.self, matching: [.equals("label", "r0-7")]).map(\.id) == ["A-7"])
            #expect(storage.core.writer.commitCount == commits, "a described type registered with a commit")
            // A new type is described in `meta` by the writer.
            #expect(try await storage.fetch(Cell<CellB>.self, id: "B-1") == nil)
            #expect(storage.core.writer.commitCount == commits + 1)
        }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            // Another declaration of the stored type becomes the newest: a write, and its index works.
            let commits = storage.core.writer.commitCount
            #expect(try await storage.count(NarrowCellA.self, matching: [.equals("group", 2)]) == 4)
            #expect(storage.core.writer.commitCount > commits)
        }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            // Back to the wider declaration: `meta` holds the narrow one as its newest, so this commits too.
            let commits = storage.core.writer.commitCount
            #expect(try await storage.count(Cell<CellA>.self, matching: [.equals("label", "r0-9")]) == 1)
            #expect(storage.core.writer.commitCount > commits)
        }
    }

    /// Four described types registered in place while four new ones are registered by the writer and every
    /// type is written, in several rounds; each type's records and index counts then match a model.
    @Test func registrationsInPlaceAndOnTheWriterRunTogether() async throws {
        for round in 0..<6 {
            let directory = temporaryDirectory()
            try await withStore(diskConfiguration(directory)) { storage async throws in
                try await storage.save(contentsOf: Self.cells(CellA.self, count: 30, round: round))
                try await storage.save(contentsOf: Self.cells(CellB.self, count: 30, round: round))
                try await storage.save(contentsOf: Self.cells(CellC.self, count: 30, round: round))
                try await storage.save(contentsOf: Self.cells(CellD.self, count: 30, round: round))
            }
            try await withStore(diskConfiguration(directory)) { storage async throws in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    func exercise<Tag: CellTag>(_ tag: Tag.Type, described: Bool) {
                        group.addTask {
                            if described {
                                _ = try await storage.count(Cell<Tag>.self, matching: [.equals("group", 1)])
                            }
                            try await storage.save(contentsOf: Self.cells(Tag.self, count: 40, round: round + 1))
                        }
                    }
                    exercise(CellE.self, described: false)
                    exercise(CellA.self, described: true)
                    exercise(CellF.self, described: false)
                    exercise(CellB.self, described: true)
                    exercise(CellG.self, described: false)
                    exercise(CellC.self, described: true)
                    exercise(CellH.self, described: false)
                    exercise(CellD.self, described: true)
                    try await group.waitForAll()
                }
                try await Self.expectModel(CellA.self, storage, round: round + 1)
                try await Self.expectModel(CellB.self, storage, round: round + 1)
                try await Self.expectModel(CellC.self, storage, round: round + 1)
                try await Self.expectModel(CellD.self, storage, round: round + 1)
                try await Self.expectModel(CellE.self, storage, round: round + 1)
                try await Self.expectModel(CellF.self, storage, round: round + 1)
                try await Self.expectModel(CellG.self, storage, round: round + 1)
                try await Self.expectModel(CellH.self, storage, round: round + 1)
            }
        }
    }

    /// A read transaction that began before another thread opened a type's databases cannot use their handles
    /// (LMDB answers `EINVAL`): it starts again on a new snapshot and reads the type.
    @Test func aSnapshotOlderThanATypesRegistrationStartsAgain() async throws {
        let directory = temporaryDirectory()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(contentsOf: Self.cells(CellA.self, count: 5, round: 0))
            try await storage.save(contentsOf: Self.cells(CellB.self, count: 5, round: 0))
        }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            let attempts = Mutex(0)
            let found = try await storage.read { tx -> Cell<CellB>? in
                let first = attempts.withLock { count in
                    count += 1
                    return count == 1
                }
                if first {
                    // Another thread registers the type while this snapshot is open.
                    let registered = DispatchSemaphore(value: 0)
                    let core = storage.core
                    let thread = Thread {
                        _ = core.registeredInPlace(Cell<CellB>.self, name: Cell<CellB>.storageName)
                        registered.signal()
                    }
                    thread.start()
                    registered.wait()
                    #expect(core.cachedSchema(for: Cell<CellB>.self) != nil)
                }
                return try tx.fetch(Cell<CellB>.self, id: "B-2")
            }
            #expect(found == Cell(id: "B-2", group: 2, label: "r0-2"))
            #expect(attempts.withLock { $0 } == 2)
        }
    }

    /// A type's databases are checked at the type's first use, not when the store opens: a damaged root page
    /// of one type's records leaves the store open and the other type readable, and that type's reads throw
    /// `decodingFailed` naming it (never a crash), however often they are tried.
    @Test func aDamagedRootPageFailsItsTypeAloneAtItsFirstUse() async throws {
        let directory = temporaryDirectory()
        let root = try await withStore(diskConfiguration(directory)) { storage async throws -> UInt64 in
            try await storage.save(contentsOf: Self.cells(CellA.self, count: 30, round: 0))
            try await storage.save(contentsOf: Self.cells(CellB.self, count: 30, round: 0))
            return try storage.core.environment.read { txn -> UInt64 in
                let info = try #require(try TypeRegistry.info(named: "CellB", meta: storage.core.meta, txn: txn))
                let record = try #require(try txn.get(Database(handle: 1), key: Array("r.\(info.number)".utf8)))
                return DatabaseRecord(Array(record), at: 0).root
            }
        }
        try Self.damagePage(root, in: directory)
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try await storage.fetch(Cell<CellA>.self, id: "A-1") == Cell(id: "A-1", group: 1, label: "r0-1"))
            for _ in 0..<2 {
                do {
                    _ = try await storage.fetch(Cell<CellB>.self, id: "B-1")
                    Issue.record("a read of the damaged type gave no error")
                } catch LocalStorageError.decodingFailed(let reason) {
                    #expect(reason.contains("CellB") && reason.contains("root page"), "\(reason)")
                }
            }
            #expect(try await storage.count(Cell<CellA>.self, matching: [.equals("group", 1)]) == 6)
        }
    }

    /// Work over every type leaves a damaged type out instead of failing with it: saves under a store limit
    /// keep the limit over the other type, the expiry sweep purges it, statistics count it, and the damage is
    /// logged once. (Before, each of them failed with `decodingFailed` naming the damaged type.)
    @Test func aDamagedTypeIsLeftOutOfWorkOverEveryType() async throws {
        let directory = temporaryDirectory()
        let root = try await withStore(diskConfiguration(directory)) { storage async throws -> UInt64 in
            try await storage.save(contentsOf: Self.cells(CellB.self, count: 30, round: 0))
            return try storage.core.environment.read { txn -> UInt64 in
                let info = try #require(try TypeRegistry.info(named: "CellB", meta: storage.core.meta, txn: txn))
                let slot = try #require(info.slots.first).number  // the "group" index's database
                let record = try #require(try txn.get(Database(handle: 1), key: Array("i.\(info.number).\(slot)".utf8)))
                return DatabaseRecord(Array(record), at: 0).root
            }
        }
        try Self.damagePage(root, in: directory)
        let clock = VirtualClock()
        let logger = RecordingLogger()
        var configuration = diskConfiguration(directory)
        configuration.clock = clock
        configuration.logger = logger
        configuration.limits = StorageLimits(maxRecords: 20)
        configuration.evictionPolicy = .leastRecentlyUsed  // the 20 newest stay
        try await withStore(configuration) { storage async throws in
            // 50 saves of A, one commit each: the store's limit of 20 holds over A's records alone.
            let cells = Self.cells(CellA.self, count: 50, round: 1)
            for (offset, cell) in cells.enumerated() {
                try await storage.save(cell, expiration: offset % 2 == 0 ? .seconds(60) : .never)
                #expect(try await storage.count(Cell<CellA>.self) == min(offset + 1, 20))
            }
            let kept = try await storage.fetch(Cell<CellA>.self)
            #expect(Set(kept.map(\.id)) == Set(cells.suffix(20).map(\.id)))
            let statistics = try await storage.statistics()
            #expect(statistics.records == 20)
            #expect(statistics.types["CellA"]?.records == 20)
            clock.advance(by: .seconds(61))
            #expect(try await storage.purgeExpired() == 10)
            #expect(try await storage.count(Cell<CellA>.self) == 10)
            await #expect(throws: LocalStorageError.self) { try await storage.fetch(Cell<CellB>.self, id: "B-1") }
        }
        let reports = logger.messages(at: .error).filter { $0.contains("damaged") }
        #expect(reports.count == 1, "\(logger.messages(at: .error))")
    }

    /// Overwrites the page type of page `page` of the store in `directory` (neither a leaf nor a branch page).
    private static func damagePage(_ page: UInt64, in directory: URL) throws {
        let data = storeFilesDirectory(directory).appendingPathComponent("data.mdb")
        var bytes = try Data(contentsOf: data)
        let flags = Int(page) * Int(sysconf(Int32(_SC_PAGESIZE))) + 10
        bytes[flags] = 0
        bytes[flags + 1] = 0
        try bytes.write(to: data)
    }

    private static func expectModel<Tag: CellTag>(_ tag: Tag.Type, _ storage: LocalStorage, round: Int) async throws {
        let model = cells(Tag.self, count: 40, round: round)
        #expect(try await storage.count(Cell<Tag>.self) == 40, "\(Tag.name)")
        for group in 0..<5 {
            let expected = Set(model.filter { $0.group == group }.map(\.id))
            let found = try await storage.fetch(Cell<Tag>.self, matching: [.equals("group", group)])
            #expect(Set(found.map(\.id)) == expected, "\(Tag.name) group \(group)")
            #expect(try await storage.count(Cell<Tag>.self, matching: [.equals("group", group)]) == expected.count)
        }
        let sample = model[round % model.count]
        #expect(try await storage.fetch(Cell<Tag>.self, matching: [.equals("label", sample.label)]) == [sample])
    }
}
