import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// Change streams get every process's commits in commit order, and observers are kept by type names compared by
/// bytes.
@Suite struct ObservationOrderTests {
    /// A change stream delivers every process's commits in commit order: another process's delete that
    /// committed before this process's save comes first, although no poll of the change log ran in between
    /// (the store's clock never advances, so the poller never wakes). It came after, at the next poll.
    @Test func anotherProcesssEarlierCommitComesBeforeALaterOwnOne() async throws {
        var configuration = diskConfiguration()
        configuration.clock = VirtualClock()
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "k", text: "v1"))
        var changes = storage.changes(of: Note.self).makeAsyncIterator()

        let result = try await CLIResult.run(
            ["delete", "Note", "k", "--store", configuration.storeDirectory.path], environment: nil)
        #expect(result.status == 0, "\(result.stderr)")
        try await storage.save(Note(id: "k", text: "v2"))

        try #require(await changes.next() == .deleted(id: "k"))
        #expect(await changes.next() == .inserted(Note(id: "k", text: "v2")))
        #expect(try await storage.fetch(Note.self, id: "k")?.text == "v2")
    }

    /// Observers are kept by type name compared by bytes: a stream of the composed "café" hears of its own
    /// type's writes when a transaction first wrote the decomposed one, which nobody observes (the writer
    /// took "café" for unobserved and built no change for it).
    @Test func namesThatDifferOnlyInNormalizationHaveTheirOwnObservers() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        var changes = storage.changes(of: ComposedName.self).makeAsyncIterator()
        try await storage.write { transaction in
            try transaction.save(DecomposedName(id: "d", text: "decomposed"))
            try transaction.save(ComposedName(id: "c", text: "composed"))
        }
        try await storage.save(ComposedName(id: "c2", text: "composed"))
        try #require(await changes.next() == .inserted(ComposedName(id: "c", text: "composed")))
        #expect(await changes.next() == .inserted(ComposedName(id: "c2", text: "composed")))
    }

    /// Other processes' entries read in one poll give one change per record, at its last entry's place: a
    /// consumer applying them ends at the same state as with every entry, and a record the poll's entries
    /// inserted first comes as `.inserted` (its value is read at delivery, so the earlier entries would carry
    /// the later value). A clear comes between: a record's entries before it are left out. Random sequences
    /// against a model of the records.
    @Test func onePollsEntriesGiveEachRecordsLatestStateOnce() {
        var random = SplitMix64(seed: 77)
        for round in 0..<500 {
            let ids = (0..<4).map { [UInt8(ascii: "a") + UInt8($0)] }
            var existing = Set(ids.filter { _ in random.below(2) == 0 })
            let before = existing
            var entries: [ChangeLog.Entry] = []
            for sequence in 1...UInt64(1 + random.below(12)) {
                let id = ids[random.below(ids.count)]
                let kind: ChangeLog.Kind
                if random.below(8) == 0 {
                    kind = .touched
                } else if random.below(10) == 0 {
                    kind = .cleared
                } else if existing.contains(id) {
                    kind = [.updated, .updated, .deleted, .expired][random.below(4)]
                } else {
                    kind = .inserted
                }
                switch kind {
                case .inserted: existing.insert(id)
                case .deleted, .expired: existing.remove(id)
                case .cleared: existing = []
                default: break
                }
                entries.append(
                    ChangeLog.Entry(sequence: sequence, writer: 9, type: 1, kind: kind, id: kind == .cleared ? [] : id))
            }
            let coalesced = ChangeLog.latestPerRecord(entries)
            var state = before
            for entry in coalesced {
                switch entry.kind {
                case .inserted: state.insert(entry.id)
                case .updated:
                    #expect(
                        state.contains(entry.id), "round \(round): an update of a record the consumer does not hold")
                case .deleted, .expired: state.remove(entry.id)
                case .cleared: state = []
                default: break
                }
            }
            #expect(state == existing, "round \(round)")
            // Between two clears (and after the last), each record comes once.
            var seen: Set<[UInt8]> = []
            for entry in coalesced {
                switch entry.kind {
                case .cleared: seen = []
                case .touched: break
                default: #expect(seen.insert(entry.id).inserted, "round \(round): a record twice")
                }
            }
            for kind in [ChangeLog.Kind.touched, .cleared] {
                #expect(coalesced.filter { $0.kind == kind }.count == entries.filter { $0.kind == kind }.count)
            }
            #expect(coalesced.map(\.sequence) == coalesced.map(\.sequence).sorted(), "round \(round)")
        }
    }

    /// Another process's commit reaches a change stream as soon as it writes the data file, not at the next
    /// timed poll: the store's clock never moves here, so no timed poll runs.
    @Test(.enabled(if: DataFileWatch.isAvailable), .timeLimit(.minutes(5)))
    func anotherProcessesCommitWakesTheStreamBeforeAnyPoll() async throws {
        let clock = VirtualClock()
        var configuration = diskConfiguration()
        configuration.clock = clock
        configuration.expirySweepInterval = nil
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "a", text: "1"))
        var changes = storage.changes(of: Note.self).makeAsyncIterator()
        await clock.waitForSleepers(1)  // the timed poll, which waits for ever
        let result = try await CLIResult.run(
            ["delete", "Note", "a", "--store", configuration.storeDirectory.path], environment: nil)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(await changes.next() == .deleted(id: "a"))
    }

    /// Without a linger, the watch's thread ends with the last observer and closes its descriptors: streams started
    /// and ended over and over each get a watch of their own, and every one of them ends (checked on the watches
    /// themselves, not on the process's descriptors, which the tests running beside this one open and close).
    @Test(.enabled(if: DataFileWatch.isAvailable)) func theWatchEndsWithItsLastObserver() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        storage.core.liveQueries.watchLingerForTests.withLock { $0 = .zero }
        try await storage.save(Note(id: "a", text: "1"))
        var watches: [DataFileWatch] = []
        for round in 0..<20 {
            let stream = storage.changes(of: Note.self)
            watches.append(try #require(storage.core.liveQueries.watch))
            let task = Task {
                for await change in stream where change == .inserted(Note(id: "r\(round)", text: "")) { return }
            }
            try await storage.save(Note(id: "r\(round)", text: ""))
            await task.value
        }
        #expect(Set(watches.map(ObjectIdentifier.init)).count == 20)  // one per stream: each ended with it
        #expect(storage.core.liveQueries.watch == nil)
        // Each thread closes its descriptors as it ends, just after its stream did.
        #expect(await eventually { watches.allSatisfy(\.hasEnded) })
    }

    /// The watch outlives its last observer a while, and the next observer takes it over: streams started and ended
    /// one after another share one watch (review-105 F11: each started and stopped a thread), and it still brings
    /// each of them another process's commit (the store's clock never moves: no timed poll runs). Once the linger
    /// has passed, the watch ends.
    @Test(.enabled(if: DataFileWatch.isAvailable), .timeLimit(.minutes(5)))
    func aWatchOutlivesItsLastObserverForTheNext() async throws {
        var configuration = diskConfiguration()
        configuration.clock = VirtualClock()
        configuration.expirySweepInterval = nil
        let storage = try LocalStorage(configuration: configuration)
        let center = storage.core.liveQueries
        center.watchLingerForTests.withLock { $0 = .seconds(600) }
        for round in 0..<5 {
            try await storage.save(Note(id: "n\(round)", text: ""))
            do {
                let stream = storage.changes(of: Note.self)
                let task = Task { for await change in stream where change == .deleted(id: "n\(round)") { return } }
                let result = try await CLIResult.run(
                    ["delete", "Note", "n\(round)", "--store", configuration.storeDirectory.path], environment: nil)
                #expect(result.status == 0, "\(result.stderr)")
                await task.value
            }
            #expect(await eventually { center.observerCount == 0 }, "round \(round): the stream ended")
        }
        #expect(center.watchStarts == 1)
        let watch = try #require(center.watch)
        #expect(!watch.hasEnded)
        center.watchLingerForTests.withLock { $0 = .milliseconds(1) }
        #expect(await eventually { watch.hasEnded && center.watch == nil })
    }

    /// Wakes of a watch whose thread is busy never block the caller (they are sent under the follower's lock) and come
    /// to the thread as a few calls, however many pile up (review-108 R6: a full pipe blocked the writer for good).
    @Test(.enabled(if: DataFileWatch.isAvailable), .timeLimit(.minutes(5)))
    func wakesOfABusyWatchNeitherBlockNorPileUp() async throws {
        let file = temporaryDirectory().appendingPathComponent("watched")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data([1]).write(to: file)
        let busy = DispatchSemaphore(value: 0)
        let calls = Atomic<Int>(0)
        let started = DataFileWatch.start(
            path: file.path,
            onChange: { if calls.add(1, ordering: .sequentiallyConsistent).newValue == 1 { busy.wait() } },
            endsIdle: { _ in false })
        let watch = try #require(started)
        #expect(await eventually { calls.load(ordering: .sequentiallyConsistent) == 1 })
        // More wakes than a pipe holds, while the thread is inside its first call.
        for _ in 0..<100_000 { #expect(watch.wake()) }
        busy.signal()
        #expect(await eventually { calls.load(ordering: .sequentiallyConsistent) > 1 })
        watch.stop()
        #expect(await eventually { watch.hasEnded })
        #expect(calls.load(ordering: .sequentiallyConsistent) < 100)
    }

    /// Loads through the cache that miss one after another share one watch: each has observers of its own (its record
    /// watch, and its lease's), which started and stopped the watch's thread at every miss (review-105 F11).
    @Test(.enabled(if: DataFileWatch.isAvailable)) func loadsThatMissOneAfterAnotherShareOneWatch() async throws {
        var configuration = diskConfiguration()
        configuration.clock = VirtualClock()
        let storage = try LocalStorage(configuration: configuration)
        let center = storage.core.liveQueries
        center.watchLingerForTests.withLock { $0 = .seconds(600) }
        for index in 0..<20 {
            let loaded = try await storage.fetch(Note.self, id: "miss-\(index)") { id in Note(id: id, text: "loaded") }
            #expect(loaded?.text == "loaded")
        }
        #expect(center.observerCount == 0)
        #expect(center.watchStarts == 1)
    }

    /// While a stream is active, the writer moves the poller's position past its own commits (the next commit
    /// then reads no log), and a poll reads past an own commit whose changes never reached the queue after
    /// ``LiveQueryCenter/pollsBeforeSkippingAnOwnCommit`` polls, so other processes' changes still arrive.
    @Test func ownCommitsMoveThePositionAndAnUndeliveredOneIsSkipped() async throws {
        let clock = VirtualClock()
        var configuration = diskConfiguration()
        configuration.clock = clock
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "a", text: "1"))
        var changes = storage.changes(of: Note.self).makeAsyncIterator()
        let center = storage.core.liveQueries
        for n in 0..<3 { try await storage.save(Note(id: "own\(n)", text: "x")) }
        let logged = try storage.core.environment.read { try storage.core.changeLog.lastSequence(in: $0) }
        #expect(center.followedPosition == logged)
        for n in 0..<3 { #expect(await changes.next() == .inserted(Note(id: "own\(n)", text: "x"))) }

        // An own entry nobody publishes (as after a commit that failed once written), then another process's.
        let schema = try await storage.core.schema(for: Note.self)
        _ = try storage.core.environment.write { txn in
            try storage.core.changeLog.append(
                [ChangeLog.Pending(type: schema.number, kind: .touched, id: [])], now: LeaseMoment(wall: 0, boot: 0),
                txn: txn)
        }
        let result = try await CLIResult.run(
            ["delete", "Note", "a", "--store", configuration.storeDirectory.path], environment: nil)
        #expect(result.status == 0, "\(result.stderr)")
        for _ in 0...LiveQueryCenter.pollsBeforeSkippingAnOwnCommit {
            await clock.waitForSleepers(1)
            clock.advance(by: configuration.externalChangePollInterval)
        }
        await clock.waitForSleepers(1)
        try #require(center.skippedOwnCommitCount == 1)
        #expect(await changes.next() == .deleted(id: "a"))
    }

    /// A live query on an index a newer declaration adds sees a record the older declaration writes: the change's
    /// index values come from the writer's declaration, which lacks the index, so the query took the record for one
    /// without a value and did not rerun (trial58 D3).
    @Test func aLiveQueryOnAnAddedIndexSeesAnOlderDeclarationsWrite() async throws {
        struct Older: LocalStorageIndexed, Equatable {
            let id: String
            var name: String
            static var storageName: String { "Declared" }
            static var storageIndexes: [StorageIndex<Older>] { [.string("name") { $0.name }] }
        }
        struct Newer: LocalStorageIndexed, Equatable {
            let id: String
            var name: String
            static var storageName: String { "Declared" }
            static var storageIndexes: [StorageIndex<Newer>] {
                [.string("name") { $0.name }, .number("length") { $0.name.count }]
            }
        }
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Older(id: "a", name: "abc"))
        let latest = Mutex<[String]?>(nil)
        let watcher = Task {
            for try await rows in storage.updates(of: Newer.self, matching: [.equals("length", 3)]) {
                latest.withLock { $0 = rows.map(\.id) }
            }
        }
        defer { watcher.cancel() }
        #expect(try await waitUntil { latest.withLock { $0 } == ["a"] })
        try await storage.save(Older(id: "b", name: "xyz"))
        #expect(try await waitUntil { latest.withLock { $0 } == ["a", "b"] })
    }
}
