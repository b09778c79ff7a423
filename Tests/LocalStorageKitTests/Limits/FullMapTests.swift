import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// A store whose map reached `maxMapSize` can always be emptied: deletes, evictions and purges may use a
/// reserve that saves may not.
@Suite struct FullMapTests {
    /// A type with a limit of its own, evicted in the commit of a save.
    struct Bounded: LocalStorable, Equatable {
        let id: String
        var text: String
        static var storageLimits: StorageLimits? { StorageLimits(maxRecords: 20) }
    }

    static let text = String(repeating: "x", count: 900)

    static func configuration(clock: VirtualClock? = nil) -> LocalStorageConfiguration {
        var configuration = diskConfiguration()
        configuration.mapSize = 1 << 20
        configuration.maxMapSize = 4 << 20
        configuration.growsMapFromMapSize = true
        configuration.expirySweepInterval = nil
        if let clock { configuration.clock = clock }
        return configuration
    }

    /// Saves notes until the map is full: in batches of 50, then one at a time to the last page. Returns
    /// their ids. `expiration` gives each batch (and each single save) its expiration.
    static func fill(
        _ storage: LocalStorage, prefix: String = "n",
        expiration: (Int) -> CacheExpiration = { _ in .never }
    ) async throws -> [String] {
        var saved: [String] = []
        var round = 0
        filling: while saved.count < 100_000 {
            let batch = (saved.count..<saved.count + 50).map { Note(id: "\(prefix)\($0)", text: text) }
            round += 1
            do {
                try await storage.save(contentsOf: batch, expiration: expiration(round))
                saved += batch.map(\.id)
            } catch LocalStorageError.storageFull {
                break filling
            }
        }
        single: while true {
            let note = Note(id: "\(prefix)s\(saved.count)", text: text)
            round += 1
            do {
                try await storage.save(note, expiration: expiration(round))
                saved.append(note.id)
            } catch LocalStorageError.storageFull {
                break single
            }
        }
        return saved
    }

    /// The first query of a type sorted by update time builds the type's order (``UpdateOrder``), but never in the
    /// map's reserve, which is the deletes': on a full store the query sorts the headers, builds nothing, and every
    /// other record can be deleted after it (review-102 #1: the build went into the reserve).
    /// After deletes made room, a query a minute later builds it (review-103: it was never tried again).
    @Test(.timeLimit(.minutes(5))) func aQueryByUpdateTimeOnAFullStoreBuildsNothingInTheReserve() async throws {
        let clock = VirtualClock()
        let storage = try LocalStorage(configuration: Self.configuration(clock: clock))
        let saved = try await Self.fill(storage)
        let schema = try await storage.core.schema(for: Note.self)
        let oldest = try await storage.fetch(Note.self, options: FetchOptions(limit: 60, sort: .oldestFirst))
        // The first two batches, one update time each, each by id.
        let byID = { (a: String, b: String) in Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) }
        let expected = saved.prefix(50).sorted(by: byID) + saved.dropFirst(50).prefix(50).sorted(by: byID)
        #expect(oldest.map(\.id) == Array(expected.prefix(60)))
        #expect(try storage.core.environment.read { txn in try txn.entryCount(schema.updated) } == 0)
        #expect(schema.runtime.updateOrderDidNotFitAt.withLock { $0 } != nil)
        let halved = saved.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        for id in halved { try await storage.delete(Note.self, id: id) }
        #expect(try await storage.count(Note.self) == saved.count - halved.count)
        // Half-empty pages give little room back: all but the last 100 notes go, whole pages at a time.
        let kept = Set(saved.suffix(100))
        for id in saved.dropLast(100) where !halved.contains(id) { try await storage.delete(Note.self, id: id) }
        let newest = FetchOptions(limit: 5, sort: .newestFirst)
        let before = try await storage.fetch(Note.self, options: newest).map(\.id)
        #expect(try storage.core.environment.read { txn in try txn.entryCount(schema.updated) } == 0, "not yet")
        clock.advance(by: LocalRecordStore.updateOrderRetryInterval)
        #expect(try await storage.fetch(Note.self, options: newest).map(\.id) == before)
        let remaining = try await storage.count(Note.self)
        #expect(remaining == kept.subtracting(halved).count)
        #expect(try storage.core.environment.read { txn in try txn.entryCount(schema.updated) } == remaining)
        #expect(try await storage.fetch(Note.self, options: newest).map(\.id) == before)
    }

    /// LMDB keeps the pages a commit freed for the snapshot before it until one more commit: right after a
    /// full store was emptied, the next save must still fit (the store commits once more to reuse them).
    @Test func aSaveRightAfterAFullStoreWasEmptiedFits() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let saved = try await Self.fill(storage)
        #expect(saved.count > 200)
        try await storage.deleteAll(Note.self)
        #expect(try await storage.count(Note.self) == 0)
        let batch = (0..<(saved.count / 2)).map { Note(id: "again\($0)", text: Self.text) }
        try await storage.save(contentsOf: batch)
        #expect(try await storage.count(Note.self) == batch.count)
        #expect(try await storage.fetch(Note.self, id: "again0") == batch[0])
    }

    /// Saves that do not fit, each after a commit that freed little (one delete), fail without a commit of their
    /// own and without using the reserve up: the store still empties one delete at a time afterwards.
    @Test func failedSavesAtAFullMapLeaveTheReserveForDeletes() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let saved = try await Self.fill(storage)
        try #require(saved.count > 100)
        let commits = storage.core.environment.lastTransactionID
        for round in 0..<100 {
            try await storage.delete(Note.self, id: saved[round])
            await #expect(throws: LocalStorageError.storageFull) {
                try await storage.save(contentsOf: (0..<50).map { Note(id: "extra\(round)-\($0)", text: Self.text) })
            }
        }
        #expect(storage.core.environment.lastTransactionID == commits + 100)  // the deletes, nothing more
        for id in saved.dropFirst(100) { try await storage.delete(Note.self, id: id) }
        #expect(try await storage.count(Note.self) == 0)
    }

    /// A store that grew under a larger `maxMapSize` and is opened with a smaller one (past which its data already
    /// goes) reads, refuses saves that add data, and comes back under its limit by deletes: they, and
    /// `deleteAll`, threw `storageFull` too, since the reserve ended at the limit, below the data
    /// (/work/trial59.md).
    @Test func aStoreOpenedWithALimitBelowItsDataEmptiesByDeletes() async throws {
        var large = Self.configuration()
        large.maxMapSize = 16 << 20
        let ids: [String]
        do {
            let storage = try LocalStorage(configuration: large)
            ids = (0..<6_000).map { "n\($0)" }
            for start in stride(from: 0, to: ids.count, by: 500) {
                try await storage.save(contentsOf: ids[start..<start + 500].map { Note(id: $0, text: Self.text) })
            }
        }
        #expect(await eventually { !EnvironmentRegistry.isOpen(large.storeDirectory) })
        var small = large
        small.maxMapSize = 4 << 20  // below the data
        let storage = try LocalStorage(configuration: small)
        #expect(try await storage.fetch(Note.self, id: "n1")?.text == Self.text)
        await #expect(throws: LocalStorageError.storageFull) {
            try await storage.save(contentsOf: (0..<500).map { Note(id: "more\($0)", text: Self.text) })
        }
        for id in ids.prefix(200) { try await storage.delete(Note.self, id: id) }
        #expect(try await storage.count(Note.self) == ids.count - 200)
        try await storage.deleteAll(Note.self)
        #expect(try await storage.count(Note.self) == 0)
        try await storage.save(Note(id: "again", text: Self.text))
        #expect(try await storage.fetch(Note.self, id: "again")?.text == Self.text)
    }

    @Test func aFullMapCanBeEmptiedOneDeleteAtATime() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let saved = try await Self.fill(storage)
        #expect(saved.count > 100)
        for id in saved {
            try await storage.delete(Note.self, id: id)
        }
        #expect(try await storage.count(Note.self) == 0)
        #expect(!LocalStorageError.storageFull.description.contains("the log says which"))
    }

    @Test func afterEmptyingSavesWorkAgainAndTheReserveStaysForDeletes() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let first = try await Self.fill(storage)
        for id in first { try await storage.delete(Note.self, id: id) }
        // Refilled, the store holds about as much as the first time: the saves did not use the reserve up.
        let second = try await Self.fill(storage, prefix: "m")
        #expect(second.count * 10 >= first.count * 9)
        // And it empties again, one delete at a time.
        for id in second { try await storage.delete(Note.self, id: id) }
        #expect(try await storage.count(Note.self) == 0)
        try await storage.save(Note(id: "again", text: Self.text))
        #expect(try await storage.fetch(Note.self, id: "again") != nil)
    }

    @Test func aSaveThatEvictsAsMuchAsItAddsWorksAtAFullMap() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        for number in 0..<20 {
            try await storage.save(Bounded(id: "b\(number)", text: Self.text))
        }
        let filled = try await Self.fill(storage)
        for number in 20..<60 {
            // Each save evicts one record of the same size: the store does not grow.
            try await storage.save(Bounded(id: "b\(number)", text: Self.text))
            #expect(try await storage.fetch(Bounded.self, id: "b\(number)") != nil)
        }
        #expect(try await storage.count(Bounded.self) == 20)
        // Saves that only add still do not fit, but for the pages the evicting saves' commits left free (LMDB reuses
        // a commit's freed pages two commits later): a sliver of what the first fill took.
        let more = try await Self.fill(storage, prefix: "more")
        #expect(
            more.count * 10 < filled.count,
            "\(more.count) notes fitted after the evicting saves, \(filled.count) before")
    }

    @Test func purgeExpiredWorksAtAFullMap() async throws {
        let clock = VirtualClock()
        let storage = try LocalStorage(configuration: Self.configuration(clock: clock))
        // Each batch and each single save expires one second after the one before.
        let saved = try await Self.fill(storage) { round in .seconds(Double(round)) }
        var purged = 0
        var rounds = 0
        while purged < saved.count && rounds < 10_000 {
            clock.advance(by: .seconds(1))
            purged += try await storage.purgeExpired()
            rounds += 1
        }
        #expect(purged == saved.count)
        #expect(try await storage.count(Note.self) == 0)
    }

    /// A note in one of two halves, by an index.
    struct HalfNote: LocalStorageIndexed, Equatable {
        let id: String
        var text: String
        var half: String
        static var storageIndexes: [StorageIndex<HalfNote>] { [StorageIndex("half", \.half)] }
    }

    /// `delete(_:matching:)` of every other record of a full store: one commit would rewrite every page and not fit
    /// (LMDB reuses no page a commit frees in that commit), so the records go in parts, and the store holds the
    /// other half, whole (trial98 D1: it threw `storageFull`, the error whose advice is to delete records).
    /// Saves notes until the map is full, in batches of 50 whose even ids are in half "a" and odd ids in half "b";
    /// with `expiring`, the "a" notes expire after a second. Returns them.
    static func fillHalves(_ storage: LocalStorage, expiring: Bool = false) async throws -> [HalfNote] {
        var saved: [HalfNote] = []
        filling: while saved.count < 100_000 {
            let batch = (saved.count..<saved.count + 50).map {
                HalfNote(id: String(format: "n%06d", $0), text: Self.text, half: $0 % 2 == 0 ? "a" : "b")
            }
            do {
                if expiring {
                    try await storage.save(contentsOf: batch.filter { $0.half == "a" }, expiration: .seconds(1))
                    try await storage.save(contentsOf: batch.filter { $0.half == "b" })
                } else {
                    try await storage.save(contentsOf: batch)
                }
                saved += batch
            } catch LocalStorageError.storageFull {
                break filling
            }
        }
        try #require(saved.count > 1_000)
        return saved
    }

    @Test(.timeLimit(.minutes(5))) func deleteMatchingEveryOtherRecordOfAFullStoreGetsThrough() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let saved = try await Self.fillHalves(storage)
        let changes = storage.changes(of: HalfNote.self)
        let commits = storage.core.writer.commitCount
        let deleted = try await storage.delete(HalfNote.self, matching: [.equals("half", "a")])
        #expect(storage.core.writer.commitCount - commits > 1, "the delete went in parts")
        let kept = saved.filter { $0.half == "b" }
        #expect(deleted == saved.count - kept.count)
        #expect(try await storage.count(HalfNote.self) == kept.count)
        #expect(try await storage.count(HalfNote.self, matching: [.equals("half", "a")]) == 0)
        let stored = try await storage.fetch(HalfNote.self, ids: saved.map(\.id))
        #expect(stored.count == kept.count && kept.allSatisfy { stored[$0.id] == $0 })
        var seen = Set<String>()
        for await change in changes {
            guard case .deleted(let id) = change else { continue }
            seen.insert(id)
            if seen.count == deleted { break }
        }
        #expect(seen == Set(saved.filter { $0.half == "a" }.map(\.id)))
    }

    /// A task cancelled while `delete(_:matching:)` goes in parts stops between them with Swift's own
    /// `CancellationError` (trial99 #2: a `storageError` wrapping it), and what it had not deleted stays.
    @Test func aDeleteInPartsStopsWithCancellationErrorWhenItsTaskIsCancelled() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let saved = try await Self.fillHalves(storage)
        let outcome = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await storage.delete(HalfNote.self, matching: [.equals("half", "a")])
        }.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        // The one commit did not fit and the first part never started.
        #expect(try await storage.count(HalfNote.self) == saved.count)
    }

    /// `purgeExpired()` of every other record of a full store: a batch of 10,000 scattered deletes does not fit
    /// either, so batches halve until one does (trial99 #1: it threw `storageFull` and purged nothing).
    @Test func purgeExpiredOfEveryOtherRecordOfAFullStoreGetsThrough() async throws {
        let clock = VirtualClock()
        let storage = try LocalStorage(configuration: Self.configuration(clock: clock))
        let saved = try await Self.fillHalves(storage, expiring: true)
        clock.advance(by: .seconds(2))
        let expired = saved.filter { $0.half == "a" }
        #expect(try await storage.purgeExpired() == expired.count)
        let kept = saved.filter { $0.half == "b" }
        #expect(try await storage.count(HalfNote.self) == kept.count)
        let stored = try await storage.fetch(HalfNote.self, ids: saved.map(\.id))
        #expect(stored.count == kept.count && kept.allSatisfy { stored[$0.id] == $0 })
    }

    struct Refused: Error {}

    /// A `write` body whose writes meet the end of the map at `maxMapSize` runs exactly once, as API.md says, and
    /// its error comes out unchanged: it was run again in the map's reserve (review-83 #1), where it failed with
    /// `storageFull` after a second run, a body that caught the full map and threw its own error included.
    @Test func aWriteBodyThatMeetsAFullMapRunsOnce() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let saved = try await Self.fill(storage)
        try #require(saved.count > 100)
        let runs = CallCounter()
        await #expect(throws: LocalStorageError.storageFull) {
            try await storage.write { tx in
                runs.increment()
                for index in 0..<20 { try tx.save(Note(id: "extra\(index)", text: Self.text)) }
            }
        }
        #expect(runs.value == 1)
        await #expect(throws: Refused.self) {
            try await storage.write { tx in
                runs.increment()
                do {
                    for index in 0..<20 { try tx.save(Note(id: "extra\(index)", text: Self.text)) }
                } catch LocalStorageError.storageFull {
                    throw Refused()
                }
            }
        }
        #expect(runs.value == 2)
        // A body that catches the full map and goes on is not committed (its writes are incomplete), nor run again.
        await #expect(throws: LocalStorageError.storageFull) {
            try await storage.write { tx in
                runs.increment()
                _ = try? tx.save(Note(id: "extra", text: String(repeating: "y", count: 200_000)))
            }
        }
        #expect(runs.value == 3)
        #expect(try await storage.fetch(Note.self, id: "extra") == nil)
        #expect(try await storage.count(Note.self) == saved.count)
    }

    /// Right after a full store was emptied, a `write` body fits in its one run: the pages the emptying commit
    /// freed are made reusable before it runs (it met the end of the map and ran a second time). The writer does
    /// that when the map is at its limit with less than an eighth of it past the data's last page, which a store
    /// filled to its end is (the emptying leaves that last page where it was).
    @Test func aWriteBodyRightAfterAFullStoreWasEmptiedRunsOnce() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let saved = try await Self.fill(storage)
        try await storage.deleteAll(Note.self)
        let runs = CallCounter()
        try await storage.write { tx in
            runs.increment()
            try tx.save(contentsOf: (0..<(saved.count / 2)).map { Note(id: "again\($0)", text: Self.text) })
        }
        #expect(runs.value == 1)
        #expect(try await storage.count(Note.self) == saved.count / 2)
    }

    /// At a full map, a `write` body queued behind one that empties the store (dropping a type's trees takes few
    /// pages) runs once and commits: the two commit one after the other, the second after the pages the first
    /// freed were made reusable. In one group commit the second met the end of the map beside its peer's deletes,
    /// and ran a second time after a reclaim (review-84 #1), or failed.
    @Test func aWriteBodyQueuedBehindAnEmptyingBodyAtAFullMapRunsOnceAndCommits() async throws {
        let storage = try LocalStorage(configuration: Self.configuration())
        let saved = try await Self.fill(storage)
        try #require(saved.count > 100)
        let runs = CallCounter()
        let hold = try await WriterHold(storage)
        let emptying = Task { try await storage.write { tx in try tx.deleteAll(Note.self) } }
        try await waitUntil("the emptying body is queued") { storage.core.writer.queuedCount == 1 }
        let refilling = Task {
            try await storage.write { tx in
                runs.increment()
                try tx.save(contentsOf: (0..<(saved.count / 2)).map { Note(id: "again\($0)", text: Self.text) })
            }
        }
        try await waitUntil("the refilling body is queued") { storage.core.writer.queuedCount == 2 }
        try await hold.release()
        try await emptying.value
        try await refilling.value
        #expect(runs.value == 1)
        #expect(try await storage.count(Note.self) == saved.count / 2)
    }
}
