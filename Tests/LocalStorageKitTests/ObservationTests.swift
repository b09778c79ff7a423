import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

@Suite struct ObservationTests {
    // MARK: - Change streams

    @Test func changeStreamReportsEveryWriteOfItsTypeInCommitOrder() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.autoPurgeExpiredOnRead = true
        let storage = try LocalStorage(configuration: configuration)
        // Live as soon as the call returns: the very next save is delivered.
        var changes = storage.changes(of: Note.self).makeAsyncIterator()
        let past = CacheExpiration.date(Date().addingTimeInterval(-1))

        try await storage.save(Note(id: "a", text: "1"))
        try await storage.save(Note(id: "a", text: "2"))
        try await storage.save(Product.sample(1))
        try await storage.save(contentsOf: [Note(id: "b", text: "b"), Note(id: "c", text: "c")])
        try await storage.update(Note.self, id: "b") { $0.text = "b2" }
        try await storage.delete(Note.self, id: "c")
        try await storage.delete(Note.self, id: "missing")
        try await storage.setExpiration(Note.self, id: "a", .hours(1))
        try await storage.save(Note(id: "read", text: "r"), expiration: past)
        #expect(try await storage.fetch(Note.self, id: "read") == nil)  // purges on read
        try await storage.save(Note(id: "old", text: "o"), expiration: past)
        #expect(try await storage.purgeExpired() == 1)
        try await storage.deleteAll(Note.self)
        try await storage.deleteAll(Note.self)

        let expected: [StorageChange<Note>] = [
            .inserted(Note(id: "a", text: "1")), .updated(Note(id: "a", text: "2")),
            .inserted(Note(id: "b", text: "b")), .inserted(Note(id: "c", text: "c")),
            .updated(Note(id: "b", text: "b2")), .deleted(id: "c"),
            .inserted(Note(id: "read", text: "r")), .expired(id: "read"),
            .inserted(Note(id: "old", text: "o")), .expired(id: "old"),
            .cleared, .cleared,
        ]
        var received: [StorageChange<Note>] = []
        for _ in expected {
            guard let change = await changes.next() else { break }
            received.append(change)
        }
        #expect(received == expected)
    }

    /// Saves through another Swift type stored under the same name reach the change stream, read as its type
    /// (they were dropped, while deletes arrived: a consumer mirroring the store drifted).
    @Test(.timeLimit(.minutes(5))) func savesThroughAnotherTypeOfTheSameNameReachTheStream() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        var changes = storage.changes(of: NoteSummary.self).makeAsyncIterator()
        // Each change is taken before the next write: a save through the other type is read from the store as it is
        // delivered, and a record deleted by then comes as its delete alone (as other processes' changes do), which a
        // loaded machine's late delivery made of this test's first two.
        var received: [StorageChange<NoteSummary>] = []
        try await storage.save(Note(id: "a", text: "1"))
        received.append(try #require(await changes.next()))
        try await storage.write { tx in try tx.save(Note(id: "a", text: "2")) }
        received.append(try #require(await changes.next()))
        try await storage.save(NoteSummary(id: "b"))
        received.append(try #require(await changes.next()))
        try await storage.delete(Note.self, id: "a")
        received.append(try #require(await changes.next()))
        let expected: [StorageChange<NoteSummary>] = [
            .inserted(NoteSummary(id: "a")), .updated(NoteSummary(id: "a")), .inserted(NoteSummary(id: "b")),
            .deleted(id: "a"),
        ]
        #expect(received == expected)
    }

    @Test func slowConsumerNeverBlocksTheWriterAndKeepsTheNewestEvents() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.changeStreamBufferSize = 8
        let logger = RecordingLogger()
        let storage = try LocalStorage(configuration: configuration, logger: logger)
        let unread = storage.changes(of: Note.self)

        // Nobody reads while 150 events are published: every save still returns.
        try await storage.save(contentsOf: (0..<100).map { Note(id: String(format: "n%03d", $0), text: "") })
        for index in 100..<150 { try await storage.save(Note(id: String(format: "n%03d", index), text: "")) }

        var iterator = unread.makeAsyncIterator()
        var buffered: [StorageChange<Note>] = []
        for _ in 0..<8 { if let change = await iterator.next() { buffered.append(change) } }
        #expect(buffered == (142..<150).map { .inserted(Note(id: String(format: "n%03d", $0), text: "")) })
        try await storage.delete(Note.self, id: "n000")
        #expect(await iterator.next() == .deleted(id: "n000"))
        #expect(logger.messages(at: .warning).count == 1)
    }

    @Test func endingAChangeStreamFreesItsObserver() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let hub = storage.core.hub

        let task = Task { for await _ in storage.changes(of: Note.self) {} }
        #expect(await eventually { hub.subscriberCount == 1 })
        task.cancel()
        await task.value
        #expect(await eventually { hub.subscriberCount == 0 })

        try await storage.save(Note(id: "a", text: ""))
        let leaving = Task { () -> StorageChange<Note>? in
            for await change in storage.changes(of: Note.self) {
                return change
            }
            return nil
        }
        #expect(await eventually { hub.subscriberCount == 1 })
        try await storage.delete(Note.self, id: "a")
        #expect(await leaving.value == .deleted(id: "a"))
        #expect(await eventually { hub.subscriberCount == 0 })

        _ = storage.changes(of: Note.self)  // dropped unread
        #expect(await eventually { hub.subscriberCount == 0 })
    }

    // MARK: - Live queries

    @Test func liveQueryStartsWithTheResultAndEmitsOnlyChanges() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.liveQueryCoalescing = .milliseconds(10)
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "a", text: "1"))
        // The query `updates(of:)` runs, counted, and every emission kept (none dropped for a slow reader).
        let runs = CallCounter()
        let finishedRuns = CallCounter()
        let stream = storage.liveQuery(of: Note.self, buffering: .unbounded) { storage in
            runs.increment()
            defer { finishedRuns.increment() }
            return try await storage.fetch(Note.self)
        }
        var emissions = stream.makeAsyncIterator()
        #expect(try await emissions.next() == [Note(id: "a", text: "1")])

        // Saving the same value again writes a new version of the record: results are told apart by ids
        // and record versions (nothing is encoded), so the rerun emits it once, and the next change next.
        try await storage.save(Note(id: "a", text: "1"))
        try await waitUntil("the query reruns after the identical save") { finishedRuns.value >= 2 }
        #expect(try await emissions.next() == [Note(id: "a", text: "1")])
        try await storage.save(Note(id: "b", text: "2"))
        #expect(try await emissions.next() == [Note(id: "a", text: "1"), Note(id: "b", text: "2")])
        #expect(runs.value >= 3)

        let live = Recorder(storage.updates(of: Note.self))
        #expect(await live.eventually { $0 == [[Note(id: "a", text: "1"), Note(id: "b", text: "2")]] })
        try await storage.setExpiration(Note.self, id: "a", .date(Date().addingTimeInterval(-1)))
        #expect(await live.eventually { $0.last == [Note(id: "b", text: "2")] })
        try await storage.deleteAll(Note.self)
        #expect(await live.eventually { $0.last == [] })
        #expect(live.values.count == 3)
        live.cancel()
    }

    /// A committed change to a record outside a live query's conditions (before and after) does not rerun it;
    /// one that moves a record into or out of them does.
    @Test func aChangeOutsideTheQuerysRangeCausesNoRerun() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.liveQueryCoalescing = .milliseconds(5)
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(user("ada", .admin, age: 36))
        let admins = Recorder(
            storage.updates(of: User.self, matching: [.equals("role", "admin"), .atLeast("age", 18)]))
        #expect(await admins.eventually { $0.last?.map(\.id) == ["ada"] })
        // Counted on the writer thread before each save returns: no waiting to see that nothing happened.
        let invalidations = storage.core.liveQueries.invalidationCount
        // Outside before and after: a new viewer, an editor changing age, a young admin, deleting a viewer.
        try await storage.save(user("vic", .viewer, age: 40))
        try await storage.save(user("ed", .editor, age: 30))
        try await storage.save(user("ed", .editor, age: 31))
        try await storage.save(user("kid", .admin, age: 12))
        try await storage.delete(User.self, id: "vic")
        #expect(storage.core.liveQueries.invalidationCount == invalidations)
        // Into the range: the editor becomes an admin.
        try await storage.save(user("ed", .admin, age: 31))
        #expect(storage.core.liveQueries.invalidationCount == invalidations + 1)
        #expect(await admins.eventually { $0.last?.map(\.id).sorted() == ["ada", "ed"] })
        // Out of it again, by delete.
        try await storage.delete(User.self, id: "ada")
        #expect(await admins.eventually { $0.last?.map(\.id) == ["ed"] })
        admins.cancel()
    }

    /// A rerun whose rows have the same ids and record versions emits nothing, and nothing is encoded to
    /// tell: the values are compared by what the store already knows.
    @Test func anUnchangedResultIsToldByVersionsWithoutEncoding() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.liveQueryCoalescing = .milliseconds(5)
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(contentsOf: (0..<20).map { EncodeCountedNote(id: "n\($0)", text: "x") })
        let live = Recorder(storage.updates(of: EncodeCountedNote.self))
        #expect(await live.eventually { $0.last?.count == 20 })
        let encodes = EncodeCountedNote.encodes.value
        let reruns = storage.core.liveQueries.rerunCount
        try await storage.setExpiration(EncodeCountedNote.self, id: "n3", .days(1))  // reruns, same rows
        try await waitUntil("the live query reran") { storage.core.liveQueries.rerunCount > reruns }
        // The encodes are counted before the rerun is; an emission for it would make the count below 3.
        #expect(EncodeCountedNote.encodes.value == encodes)
        try await storage.save(EncodeCountedNote(id: "n3", text: "changed"))  // a new version of one row
        #expect(await live.eventually { $0.count == 2 && $0.last?.first(where: { $0.id == "n3" })?.text == "changed" })
        live.cancel()
    }

    @Test func indexedLiveQueryFollowsOnlyItsMatches() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.liveQueryCoalescing = .milliseconds(10)
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(user("ada", .admin, age: 36))
        let admins = Recorder(
            storage.updates(
                of: User.self, matching: [.equals("role", "admin")],
                orderedBy: .descending("age")))
        #expect(await admins.eventually { $0.last?.map(\.id) == ["ada"] })

        try await storage.save(user("vic", .viewer, age: 50))  // not a match: reruns, emits nothing
        try await storage.save(user("bob", .admin, age: 40))
        #expect(await admins.eventually { $0.last?.map(\.id) == ["bob", "ada"] })
        try await storage.update(User.self, id: "ada") { $0.role = .editor }
        #expect(await admins.eventually { $0.last?.map(\.id) == ["bob"] })
        #expect(admins.values.map { $0.map(\.id) } == [["ada"], ["bob", "ada"], ["bob"]])
        admins.cancel()

        await #expect(throws: LocalStorageError.unknownIndex("nickname")) {
            for try await _ in storage.updates(of: User.self, matching: [.equals("nickname", "x")]) {}
        }
    }

    @Test func leavingTheLoopOrCancellingFreesTheLiveQuery() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let core = storage.core

        for try await result in storage.updates(of: Note.self) {
            #expect(result.isEmpty)
            break
        }
        #expect(
            await eventually {
                core.hub.subscriberCount == 0 && core.liveQueries.observerCount == 0 && !core.liveQueries.isPolling
            })

        let task = Task { for try await _ in storage.repository(Note.self).updates() {} }
        #expect(await eventually { core.liveQueries.observerCount == 1 && core.liveQueries.isPolling })
        task.cancel()
        _ = await task.result
        #expect(
            await eventually {
                core.hub.subscriberCount == 0 && core.liveQueries.observerCount == 0 && !core.liveQueries.isPolling
            })
    }

    /// A run that ends after the query was stopped (its task cancelled mid-run) sets no expiry wake-up: one was
    /// set, and slept until the type's next expiry, however far.
    @Test func aRunEndingAfterStopLeavesNoExpiryTimer() async throws {
        let clock = VirtualClock()
        let query = LiveQuery<Note>(coalescing: .zero, clock: clock)
        let (_, output) = AsyncThrowingStream.makeStream(of: [Note].self)
        query.stop()
        let inAnHour = clock.wallNanoseconds() + 3_600_000_000_000
        await query.run(emittingTo: output, query: { [] }, nextExpiry: { _ in inAnHour })
        #expect(!query.hasExpiryTimer)
    }

    /// A row that expires while the query runs (after the moment it read, before the run ended) is in the
    /// result and must get its expiry rerun: the next expiry was looked up after the run, from a later moment,
    /// so it skipped that row and nothing ever took it out of the result.
    @Test(.timeLimit(.minutes(5))) func aRowExpiringWhileTheQueryRunsStillLeavesTheResult() async throws {
        let clock = VirtualClock()
        let query = LiveQuery<Note>(coalescing: .zero, clock: clock)
        let expiresAt = clock.wallNanoseconds() + 5_000_000
        let runs = Mutex(0)
        let (stream, output) = AsyncThrowingStream.makeStream(of: [Note].self)
        let running = Task {
            await query.run(
                emittingTo: output,
                query: {
                    let first = runs.withLock { runs in
                        runs += 1
                        return runs == 1
                    }
                    let rows = clock.wallNanoseconds() < expiresAt ? [Note(id: "goes", text: "x")] : []
                    if first { clock.advance(by: .milliseconds(10)) }  // Time passes while the rows decode.
                    return rows
                },
                nextExpiry: { after in expiresAt > after ? expiresAt : nil })
        }
        var results = stream.makeAsyncIterator()
        #expect(try await results.next()?.map(\.id) == ["goes"])
        clock.advance(by: .seconds(1))
        #expect(try await results.next()?.isEmpty == true)
        query.stop()
        running.cancel()
    }

    @Test func aFailingQueryEndsTheStreamWithItsError() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        await #expect(throws: LocalStorageError.self) {
            for try await _ in storage.updates(of: Note.self, options: FetchOptions(limit: -1)) {}
        }
        #expect(await eventually { storage.core.liveQueries.observerCount == 0 })
    }

    @Test func repositoryStreamsMirrorTheStore() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.liveQueryCoalescing = .milliseconds(5)
        let storage = try LocalStorage(configuration: configuration)
        let repository = storage.repository(Product.self)
        var changes = repository.changes().makeAsyncIterator()
        let live = Recorder(repository.updates(options: FetchOptions(limit: 1)))
        #expect(await live.eventually(within: .seconds(300)) { $0 == [[]] })

        try await repository.save(Product.sample(2))
        #expect(await changes.next() == .inserted(Product.sample(2)))
        #expect(await live.eventually { $0.last == [Product.sample(2)] })
        try await repository.save(Product.sample(3))  // outside the first page: no new result
        #expect(await changes.next() == .inserted(Product.sample(3)))
        try await repository.save(Product.sample(1))
        #expect(await live.eventually { $0.last == [Product.sample(1)] })
        #expect(live.values == [[], [Product.sample(2)], [Product.sample(1)]])
        live.cancel()
    }

    /// Another process writes to the store while a live query watches it, and the query sees it.
    ///
    /// Why a process: LMDB forbids opening one environment twice in the same process (its POSIX
    /// locks are per process, so a second handle would take over and reset the lock file the first
    /// one uses), and ``EnvironmentRegistry`` rightly shares one per directory. The helper opens the
    /// store on its own and commits, exactly as the CLI or another app would. (Not an exit test: once one
    /// has run, Swift Testing's thread that waits for its children spins on every other child process that
    /// has exited and is not yet reaped, which cost the whole suite several percent of its CPU time.)
    @Test func writesFromAnotherProcessReachLiveQueries() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = diskConfiguration(directory)
        configuration.externalChangePollInterval = .milliseconds(20)
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(StressRecord.make(id: "local", sequence: 1))
        let live = Recorder(storage.updates(of: StressRecord.self))
        defer { live.cancel() }
        #expect(await live.eventually { $0.last?.map(\.id) == ["local"] })

        let other = try HelperProcess(["overwrite", directory.path], withInput: true)
        try await other.waitForLine("ready") { $0 == "ready" }
        #expect(try await other.ask("save remote 2") == "ok")
        other.closeInput()
        #expect(await other.waitForExit() == 0)

        #expect(await live.eventually { $0.last?.map(\.id) == ["local", "remote"] })
        #expect(storage.core.liveQueries.externalChangeCount >= 1)
    }

    @Test func theCLIDeletingARecordReachesLiveQueries() async throws {
        let watched = try await WatchedStore(holding: [Note(id: "n1", text: "one"), Note(id: "n2", text: "two")])
        let store = watched.storage.configuration.storeDirectory.path

        let result = try await CLIResult.run(["delete", "Note", "n1", "--store", store], environment: nil)

        #expect(result.status == 0, "\(result.stderr)")
        let center = watched.storage.core.liveQueries
        let arrived = await watched.live.eventually(within: .seconds(300)) { $0.last?.map(\.id) == ["n2"] }
        let diagnosis =
            "polling \(center.isPolling), position \(String(describing: center.followedPosition)), "
            + "failures \(center.readFailureCount), outside \(center.externalChangeCount), "
            + "txn \(watched.storage.core.environment.lastTransactionID), results \(watched.live.values.map { $0.map(\.id) })"
        #expect(arrived, "\(diagnosis)")
        watched.close()
    }

    // MARK: - Background expiry

    /// The sweep runs every interval of the store's clock: records that expire between two sweeps are
    /// purged by the second, and nothing is purged before a sweep is due.
    @Test func theBackgroundSweepPurgesExpiredRecords() async throws {
        let clock = VirtualClock()
        var configuration = LocalStorageConfiguration.inMemory
        #expect(configuration.expirySweepInterval == nil)
        configuration.expirySweepInterval = .seconds(60)
        configuration.externalChangePollInterval = .seconds(3600)  // the change stream's poll stays asleep
        configuration.clock = clock
        let storage = try LocalStorage(configuration: configuration)
        let changes = Recorder(storage.changes(of: Note.self))
        try await storage.save(
            contentsOf: [Note(id: "a", text: ""), Note(id: "b", text: "")],
            expiration: .seconds(90))
        try await storage.save(Note(id: "keep", text: ""))

        await clock.waitForSleepers(2)  // the sweeper and the poll
        clock.advance(by: .seconds(60))  // a sweep: nothing has expired yet
        await clock.waitForSleepers(2)  // the sweep finished and waits for the next
        clock.advance(by: .seconds(45))  // expired now, but no sweep is due
        #expect(try await storage.metadata(Note.self, id: "a")?.expiresAt != nil)
        clock.advance(by: .seconds(15))  // the second sweep
        #expect(await changes.eventually { $0.contains(.expired(id: "a")) && $0.contains(.expired(id: "b")) })
        #expect(changes.values.count == 5)  // three inserts, two expiries
        #expect(try await storage.metadata(Note.self, id: "a") == nil)
        #expect(try await storage.count(Note.self) == 1)
        changes.cancel()
    }

    @Test func theSweepWorksInBoundedBatches() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let changes = Recorder(storage.changes(of: Note.self))
        let past = CacheExpiration.date(Date().addingTimeInterval(-1))
        try await storage.save(contentsOf: (0..<25).map { Note(id: "n\($0)", text: "") }, expiration: past)
        try await storage.save(Note(id: "keep", text: ""))
        let commits = storage.commitCount

        let purged = try await ExpirySweeper.sweep(writer: storage.core.writer, meta: storage.core.meta, batchSize: 10)

        #expect(purged == 25)
        #expect(storage.commitCount - commits == 3)  // 10 + 10 + 5, one transaction each
        #expect(await changes.eventually { $0.filter { if case .expired = $0 { true } else { false } }.count == 25 })
        #expect(try await storage.count(Note.self) == 1)
        changes.cancel()
    }

    @Test func neitherTheSweepNorEndedStreamsKeepTheStoreOpen() async throws {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        let clock = VirtualClock()
        configuration.expirySweepInterval = .milliseconds(5)
        configuration.clock = clock
        var storage: LocalStorage? = try LocalStorage(configuration: configuration)
        weak let core = storage?.core
        if let storage {
            for try await _ in storage.updates(of: Note.self) { break }
            _ = storage.changes(of: Note.self)
            for _ in 0..<3 {  // a few sweeps
                await clock.waitForSleepers(1)
                clock.advance(by: .milliseconds(5))
            }
        }
        storage = nil
        #expect(await eventually { core == nil })
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: - The README's view model

    struct Post: LocalStorable, Equatable {
        let id: String
        var title: String
    }

    /// The README's platform-neutral view model (add `@Observable` on Apple platforms).
    @MainActor
    final class FeedViewModel {
        var posts: [Post] = []

        func observeFeed(storage: LocalStorage) async {
            do {
                for try await updatedPosts in storage.updates(of: Post.self) {
                    self.posts = updatedPosts
                }
            } catch {
                print("Stream terminated with error: \(error)")
            }
        }
    }

    @Test @MainActor func theReadmeViewModelFollowsTheStore() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let viewModel = FeedViewModel()
        let observation = Task { await viewModel.observeFeed(storage: storage) }
        try await storage.save(contentsOf: [Post(id: "p1", title: "Hello"), Post(id: "p2", title: "World")])
        #expect(await eventually { viewModel.posts.map(\.title) == ["Hello", "World"] })
        observation.cancel()
        await observation.value
    }
}

/// `Note` read without its text.
struct NoteSummary: LocalStorable, Equatable {
    let id: String
    static var storageName: String { Note.storageName }
}
