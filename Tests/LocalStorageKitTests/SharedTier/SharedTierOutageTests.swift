import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// A server of its own per test: killed with SIGKILL mid-stream and restarted, or connections cut.
@Suite(
    .enabled(if: RedisTestServer.binary != nil, "redis-server is not installed (scripts/ensure-dependencies.sh redis)"))
struct SharedTierOutageTests {
    @Test func aKilledServerLosesNoReturnedWriteAndInstancesRecoverByThemselves() async throws {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        var tier = server.configuration(namespace: "outage")
        // Local records are served for `maxStaleness` after the last heartbeat (every half of it): long enough
        // for what follows the kill on a loaded machine, on this real clock.
        tier.maxStaleness = .seconds(300)
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        try await b.save(StressRecord.make(id: "held-by-b", sequence: -1))

        let returned = Mutex<[Int]>([])
        let failed = Mutex<[Int]>([])
        let writer = Task {
            var n = 0
            while !Task.isCancelled {
                do {
                    try await a.save(StressRecord.make(id: "r\(n)", sequence: n))
                    returned.withLock { $0.append(n) }
                } catch {
                    failed.withLock { $0.append(n) }
                    try? await Task.sleep(for: .milliseconds(5))
                }
                n += 1
            }
        }
        #expect(try await waitUntil { returned.withLock { $0.count } >= 50 })
        await server.killOffThePool()
        #expect(try await waitUntil { failed.withLock { $0.count } >= 3 }, "writes during the outage throw")

        // During the outage: a write throws and changes nothing; local records still serve; a local miss throws.
        let localCount = try await a.count(StressRecord.self, matching: [], options: .nearCache)
        await #expect(throws: LocalStorageError.self) {
            try await a.save(StressRecord.make(id: "during-outage", sequence: 0))
        }
        #expect(try await a.count(StressRecord.self, matching: [], options: .nearCache) == localCount)
        await #expect(throws: LocalStorageError.self) { try await a.fetch(StressRecord.self, id: "during-outage") }
        #expect(try await b.fetch(StressRecord.self, id: "held-by-b")?.sequence == -1)
        await #expect(throws: LocalStorageError.self) { try await b.fetch(StressRecord.self, id: "never-saved") }

        writer.cancel()
        await writer.value
        let acknowledged = returned.withLock { $0 }

        // Restart on the same port and directory: both instances come back by themselves.
        try await server.restart()
        #expect(try await waitUntil { a.sharedTier?.phase == .live && b.sharedTier?.phase == .live })
        #expect(
            try await waitUntil {
                do {
                    try await a.save(StressRecord.make(id: "after", sequence: 1))
                    return true
                } catch {
                    return false
                }
            })
        #expect(try await waitUntil { try await b.fetch(StressRecord.self, id: "after")?.sequence == 1 })

        // No write that returned is lost on the server: a fresh instance (empty near cache) reads them all.
        let fresh = try await sharedStore(tier)
        for n in acknowledged {
            #expect(try await fresh.fetch(StressRecord.self, id: "r\(n)")?.sequence == n, "r\(n) was acknowledged")
        }
        #expect(try await fresh.fetch(StressRecord.self, id: "during-outage") == nil)
    }

    /// A server emptied while the instances stay connected (`FLUSHALL`) starts its count at 1 again: the writer of
    /// the next save and every instance that hears of it drop their local records, so each serves the server's
    /// values. Before, the writer kept its old record (its own save never reached its local store) and the
    /// others ignored every change until the server's count passed theirs.
    @Test func aServerFlushedWhileConnectedIsNoticedAndItsNewValuesAreServed() async throws {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        let tier = server.configuration(namespace: "flushed")
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        for n in 0..<3 { try await a.save(StressRecord.make(id: "f\(n)", sequence: 1)) }
        #expect(try await waitUntil { try await b.fetch(StressRecord.self, id: "f2")?.sequence == 1 })

        try server.flushAll()
        try await a.save(StressRecord.make(id: "f0", sequence: 2))
        #expect(try await a.fetch(StressRecord.self, id: "f0")?.sequence == 2)
        #expect(try await a.fetch(StressRecord.self, id: "f1") == nil)
        #expect(try await waitUntil { try await b.fetch(StressRecord.self, id: "f0")?.sequence == 2 })
        #expect(try await b.fetch(StressRecord.self, id: "f1") == nil)
        try await b.save(StressRecord.make(id: "later", sequence: 3))
        #expect(try await waitUntil { try await a.fetch(StressRecord.self, id: "later")?.sequence == 3 })
    }

    /// The history that starts after a `FLUSHALL` is applied where its log still holds all of it: the writes made
    /// since are held in every near cache again and announced after the `.cleared` of the drop. The first write
    /// after a flush used to be dropped with the old records, and no change stream ever heard of it
    /// (/work/trial76.md #1).
    @Test func theWritesAfterAFlushAreHeldAndAnnouncedEverywhere() async throws {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        let tier = server.configuration(namespace: "reflushed")
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        for n in 0..<3 { try await a.save(StressRecord.make(id: "f\(n)", sequence: 1)) }
        #expect(try await waitUntil { try await b.fetch(StressRecord.self, id: "f2")?.sequence == 1 })
        let heard = Recorder(b.changes(of: StressRecord.self).map(describe))
        defer { heard.cancel() }
        // The writer runs two catch-ups at once (its write's and its own notice's): one of them applies the new
        // history, and its observers hear it once (/work/review-76.md #3).
        let heardByWriter = Recorder(a.changes(of: StressRecord.self).map(describe))
        defer { heardByWriter.cancel() }

        try server.flushAll()
        try await a.save(StressRecord.make(id: "n1", sequence: 7))
        for storage in [a, b] {
            #expect(
                try await waitUntil {
                    try await storage.count(StressRecord.self, matching: [], options: .nearCache) == 1
                })
            #expect(try await storage.fetch(StressRecord.self, id: "n1")?.sequence == 7)
            #expect(try await storage.fetch(StressRecord.self, id: "f1") == nil)
        }
        #expect(
            await heard.eventually { values in
                guard let cleared = values.lastIndex(of: "cleared") else { return false }
                return values[cleared...].contains("inserted n1 7")
            }, "\(heard.values)")
        // A later write, heard after anything the catch-ups announce: the first write was heard once.
        try await a.save(StressRecord.make(id: "n2", sequence: 8))
        for recorder in [heard, heardByWriter] {
            #expect(await recorder.eventually { $0.contains("inserted n2 8") }, "\(recorder.values)")
            #expect(recorder.values.filter { $0 == "inserted n1 7" }.count == 1, "\(recorder.values)")
            #expect(recorder.values.filter { $0 == "cleared" }.count == 1, "\(recorder.values)")
        }
    }

    /// A fresh start of an instance whose store already knows the type (an on-disk store opened again) drops its
    /// records and fills nothing as a change: the records the server's log names are not announced to its
    /// observers (a fill is no change), whatever the log holds (/work/review-76.md #2).
    @Test func aFreshStartAnnouncesNoRecordOfTheServersHistory() async throws {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        var tier = server.configuration(namespace: "fresh")
        tier.maxStaleness = .seconds(30)
        let a = try await sharedStore(tier)
        for n in 0..<3 { try await a.save(StressRecord.make(id: "f\(n)", sequence: 1)) }

        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = temporaryDirectory()
        let mark: StorageChangeToken
        do {
            let plain = try LocalStorage(configuration: configuration)
            try await plain.save(StressRecord.make(id: "mine", sequence: 0))
            mark = try await plain.changeToken()
        }
        configuration.sharedTier = tier
        let b = try LocalStorage(configuration: configuration)
        #expect(try await waitUntil { b.sharedTier.map { $0.phase == .live } ?? false })
        #expect(try await b.fetch(StressRecord.self, id: "f1")?.sequence == 1)  // From the server.
        let (changes, _) = try await b.changes(of: StressRecord.self, since: mark)
        #expect(changes.map(describe) == ["cleared"])
    }

    /// A command connection the server closed while it was idle (its `timeout`, a proxy) is replaced before the
    /// next request: the save went out on it and failed with an unknown outcome, though the server never saw it.
    @Test func aConnectionTheServerClosedWhileIdleIsReplacedBeforeTheNextWrite() async throws {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        let tier = server.configuration(namespace: "idle")
        let storage = try await sharedStore(tier)
        try await storage.save(StressRecord.make(id: "before", sequence: 1))
        let killer = RESPConnection(
            endpoint: try tier.endpoint(), reconnectDelay: .milliseconds(10),
            maxReconnectDelay: .milliseconds(10), clock: SystemClock(), name: "test")
        defer { killer.stop() }
        // Every command connection but the killer's own; the subscriber's stays.
        let killed = try await killer.call(.command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"))
        #expect(killed.int == 1)
        try await storage.save(StressRecord.make(id: "after", sequence: 2))
        #expect(try await storage.fetch(StressRecord.self, id: "after")?.sequence == 2)
    }

    /// The rule: after a lost connection an instance catches up (from the server's change log, or by dropping
    /// its local records when the log no longer reaches back) before it serves a local record again.
    ///
    /// A server that lost its data while the instance was away (`serverLosesData`) starts a new history, whose
    /// count passes the instance's position before it is back: the log then seemed to continue from there, and
    /// the instance took the changes after its position while it kept its old copy of the one the new history
    /// changed first. The history's epoch (set with sequence 1) tells them apart: the instance drops its copies.
    @Test(arguments: zip([100_000, 2, 100_000], [false, false, true]))
    func anInstanceAwayWhileARecordChangedNeverServesItsOldCopy(
        logRetention: Int, serverLosesData: Bool
    )
        async throws
    {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        var writerTier = server.configuration(namespace: "away")
        writerTier.changeLogRetention = logRetention
        var awayTier = server.configuration(namespace: "away")
        // B stays away until the test moves its clock, after all of A's writes, however slow the machine.
        awayTier.reconnectDelay = .seconds(3)
        awayTier.maxReconnectDelay = .seconds(3)
        let clock = VirtualClock()
        let a = try await sharedStore(writerTier)
        let b = try await sharedStore(awayTier, clock: clock)
        try await a.save(StressRecord.make(id: "x", sequence: 1))
        #expect(try await b.fetch(StressRecord.self, id: "x")?.sequence == 1)
        // B holds its own copy
        #expect(try await waitUntil { try await b.count(StressRecord.self, matching: [], options: .nearCache) == 1 })

        let killer = RESPConnection(
            endpoint: try awayTier.endpoint(), reconnectDelay: .milliseconds(10),
            maxReconnectDelay: .milliseconds(10), clock: SystemClock(), name: "test")
        defer { killer.stop() }
        _ = try await killer.call(.command("CLIENT", "KILL", "TYPE", "pubsub"))
        #expect(try await waitUntil { b.sharedTier?.phase == .down })
        if serverLosesData { try server.flushAll() }
        // x's change comes first (in a new history: sequence 1), then enough others to pass B's position.
        try await a.save(StressRecord.make(id: "x", sequence: 2))
        for n in 0..<5 { try await a.save(StressRecord.make(id: "other\(n)", sequence: n)) }

        // While away (the server is reachable for B's reads, but its copy is local), then back.
        #expect(
            try await waitUntil(timeout: .seconds(300)) {
                clock.advance(by: .seconds(3))
                return b.sharedTier?.phase == .live
            })
        #expect(try await b.fetch(StressRecord.self, id: "x")?.sequence == 2)
        #expect(try await b.fetch(StressRecord.self, id: "other4")?.sequence == 4)
        let drops = b.sharedTier?.state.withLock { $0.drops } ?? 0
        // The fresh start drops once; a log of 2 entries cannot cover 6 changes, and a new history is not the
        // one B followed, so B dropped again.
        #expect(drops == (logRetention == 2 || serverLosesData ? 2 : 1))
    }
}

/// A change as the outage tests compare it.
private func describe(_ change: StorageChange<StressRecord>) -> String {
    switch change {
    case .inserted(let record): "inserted \(record.id) \(record.sequence)"
    case .updated(let record): "updated \(record.id) \(record.sequence)"
    case .deleted(let id): "deleted \(id)"
    case .expired(let id): "expired \(id)"
    case .cleared: "cleared"
    }
}
