import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// Live-query windows, expiring rows and the external-change poll on a ``VirtualClock``: time moves only
/// when a test advances it, so what must wait for a window cannot happen before the advance, whatever
/// the load on the machine.
@Suite struct LiveQueryTimingTests {
    /// An in-memory store on `clock` with a `window` of coalescing; the poll for other processes is an
    /// hour apart, so that it is the one sleeper besides the query's own windows and timers.
    static func store(_ clock: VirtualClock, window: Duration) throws -> LocalStorage {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.clock = clock
        configuration.liveQueryCoalescing = window
        configuration.externalChangePollInterval = .seconds(3600)
        return try LocalStorage(configuration: configuration)
    }

    /// Issue 21: with a 3 s window, the first save after the initial result reached the query only when the
    /// window had passed. The quiet period counts writes, not emissions: it arrives with no time passing.
    /// A burst then costs one rerun per window, and a save after a quiet window is again delivered at once.
    @Test func theFirstWriteAfterTheInitialResultArrivesAtOnceAndBurstsCoalesce() async throws {
        let clock = VirtualClock()
        let storage = try Self.store(clock, window: .seconds(3))
        let center = storage.core.liveQueries
        let live = Recorder(storage.updates(of: Note.self))
        #expect(await live.eventually { $0 == [[]] })
        await clock.waitForSleepers(1)  // the poller

        try await storage.save(Note(id: "one", text: "x"))
        #expect(await live.eventually { $0.last?.map(\.id) == ["one"] }, "\(live.values)")
        #expect(clock.uptime() == .zero)
        let reruns = center.rerunCount

        // A burst right after: the query waits out the window since its last rerun for a write.
        let burst = (0..<200).map { Note(id: "b\($0)", text: "x") }
        for note in burst { try await storage.save(note) }
        await clock.waitForSleepers(2)  // the poller and the query's window
        clock.advance(by: .milliseconds(2_900))
        #expect(clock.sleepers == 2)  // still waiting: nothing can run before the window ends
        #expect(center.rerunCount == reruns)
        #expect(live.values.count == 2)
        clock.advance(by: .milliseconds(100))
        #expect(await live.eventually { $0.last?.count == 201 })
        #expect(center.rerunCount == reruns + 1)  // one rerun for 200 saves
        #expect(live.values.count == 3)

        // A quiet window later, a single save is delivered at once again.
        clock.advance(by: .seconds(10))
        try await storage.save(Note(id: "two", text: "x"))
        #expect(await live.eventually { $0.last?.count == 202 })
        #expect(center.rerunCount == reruns + 2)
        live.cancel()
    }

    /// The quiet period counts writes: a write a whole window after the last one is delivered at once, even
    /// when the rerun for that last one (held to the window's end) ran a moment before. It waited most of a
    /// window more.
    @Test func aWriteAWindowAfterTheLastOneArrivesAtOnceAfterACoalescedRerun() async throws {
        let clock = VirtualClock()
        let storage = try Self.store(clock, window: .seconds(3))
        let live = Recorder(storage.updates(of: Note.self))
        #expect(await live.eventually { $0 == [[]] })
        await clock.waitForSleepers(1)  // the poller
        try await storage.save(Note(id: "one", text: "x"))
        #expect(await live.eventually { $0.last?.map(\.id) == ["one"] })
        clock.advance(by: .milliseconds(1))
        try await storage.save(Note(id: "two", text: "x"))
        await clock.waitForSleepers(2)  // the poller and the query's window
        clock.advance(by: .milliseconds(2_999))  // 3 s: the window of the first rerun ends
        #expect(await live.eventually { $0.last?.count == 2 })
        clock.advance(by: .milliseconds(10))  // 3.009 s after the last write: a quiet window
        try await storage.save(Note(id: "three", text: "x"))
        #expect(await live.eventually(within: .seconds(60)) { $0.last?.count == 3 }, "\(live.values)")
        live.cancel()
    }

    /// While writes keep coming, the query reruns at most once per window: a save every second for 12
    /// seconds of a 3 s window, however the query's task and the saves interleave, gives reruns at least a
    /// window apart, and the last one has every save.
    @Test func steadyWritesRerunAtMostOncePerWindow() async throws {
        let clock = VirtualClock()
        let storage = try Self.store(clock, window: .seconds(3))
        let runs = Mutex<[Duration]>([])
        let live = Recorder(
            storage.liveQuery(of: Note.self) { storage in
                runs.withLock { $0.append(clock.uptime()) }
                return try await storage.fetch(Note.self)
            })
        #expect(await live.eventually { $0 == [[]] })
        for second in 0..<12 {
            try await storage.save(Note(id: "n\(second)", text: "x"))
            clock.advance(by: .seconds(1))
        }
        clock.advance(by: .seconds(3))
        #expect(await live.eventually { $0.last?.count == 12 })
        let reruns = Array(runs.withLock { $0 }.dropFirst())
        #expect(!reruns.isEmpty)
        for (earlier, later) in zip(reruns, reruns.dropFirst()) {
            #expect(later - earlier >= .seconds(3), "reruns at \(reruns)")
        }
        #expect(reruns.count <= 6, "reruns at \(reruns)")  // one per window at most: 0, 3, 6, 9, 12, 15 s
        live.cancel()
    }

    /// A row whose time to live runs out leaves a live result when it expires: no write, no sweep.
    @Test func anExpiringRowLeavesALiveResult() async throws {
        let clock = VirtualClock()
        let storage = try Self.store(clock, window: .milliseconds(50))  // no background sweep in memory
        try await storage.save(Note(id: "stays", text: "x"))
        let live = Recorder(storage.updates(of: Note.self))
        #expect(await live.eventually { $0.last?.map(\.id) == ["stays"] })
        try await storage.save(Note(id: "goes", text: "x"), expiration: .seconds(12))
        #expect(await live.eventually { $0.last?.map(\.id) == ["goes", "stays"] })
        let writes = storage.commitCount

        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(11))
        #expect(clock.sleepers == 2)  // the poller and the row's expiry timer, due just after 12 s
        #expect(storage.core.liveQueries.rerunCount == 1)
        #expect(live.values.last?.map(\.id) == ["goes", "stays"])
        clock.advance(by: .milliseconds(1_100))
        #expect(await live.eventually { $0.last?.map(\.id) == ["stays"] })
        #expect(storage.commitCount == writes)  // nothing was written or purged meanwhile
        live.cancel()
    }

    /// The poll for other processes' commits runs on the store's clock, and never takes this process's
    /// own commits for outside ones: 20 bursts, each followed by exactly one poll.
    @Test func ownWritesAreNotMistakenForOutsideWrites() async throws {
        let clock = VirtualClock()
        var configuration = LocalStorageConfiguration.inMemory
        configuration.clock = clock
        configuration.liveQueryCoalescing = .zero
        configuration.externalChangePollInterval = .milliseconds(2)
        let storage = try LocalStorage(configuration: configuration)
        let live = Recorder(storage.updates(of: Note.self))
        #expect(await live.eventually { $0 == [[]] })
        for round in 0..<20 {
            for index in 0..<5 { try await storage.save(Note(id: "n\(round * 5 + index)", text: "")) }
            await clock.waitForSleepers(1)  // the poller, between polls
            clock.advance(by: .milliseconds(2))  // one poll sees the burst's commits
        }
        await clock.waitForSleepers(1)
        #expect(await live.eventually { $0.last?.count == 100 })
        // Rerunning on every move of the transaction id would count one per burst here.
        #expect(storage.core.liveQueries.externalChangeCount == 0)
        live.cancel()
    }
}
