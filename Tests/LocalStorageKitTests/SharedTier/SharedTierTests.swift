import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

/// Two instances (stores) on one namespace of the suite's server, in one process.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierTests {
    let tier = SharedTestServer.configuration()

    @Test func aSaveIsReadByAnotherInstanceAndKeptLocally() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        try await a.save(Product.sample(1), expiration: .hours(1))
        #expect(try await b.fetch(Product.self, id: "sku_1") == Product.sample(1))
        // The miss was filled with the server's bytes, remaining time to live included.
        #expect(try await waitUntil { try await b.count(Product.self, matching: [], options: .nearCache) == 1 })
        let local = try #require(try await b.metadata(Product.self, id: "sku_1"))
        let remote = try #require(try await a.metadata(Product.self, id: "sku_1"))
        #expect(local.expiresAt == remote.expiresAt)
        #expect(local.createdAt == remote.createdAt)
    }

    /// An instance that only reads keeps its near cache within its limits: the records it fills from the server
    /// are evicted like saved ones (they were never evicted before, so the near cache grew without bound).
    @Test func recordsFilledFromTheServerKeepTheLimits() async throws {
        let a = try await sharedStore(tier)
        var configuration = LocalStorageConfiguration.inMemory
        var tier = tier
        tier.maxStaleness = .seconds(30)  // Not about staleness: a loaded machine may delay a heartbeat past 1 s.
        configuration.sharedTier = tier
        configuration.limits = StorageLimits(maxRecords: 5)
        configuration.evictionPolicy = .leastRecentlyUsed
        let b = try LocalStorage(configuration: configuration)
        _ = try await waitUntil { b.sharedTier.map { $0.phase != .connecting && $0.phase != .syncing } ?? true }
        let products = (1...30).map { Product.sample($0) }
        try await a.save(contentsOf: products)
        for product in products {
            #expect(try await b.fetch(Product.self, id: product.id) == product)
            // The fill commits with the next group commit: this one.
            try await b.core.writer.perform { _ in }
            #expect(try await b.statistics().records <= 5, "after \(product.id)")
        }
        #expect(try await b.count(Product.self, matching: [], options: .nearCache) == 5)
    }

    @Test func writesReachEveryOtherInstancesLocalStoreAndChangeStreams() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        // B knows the type (its store has a schema for it)
        _ = try await b.count(Product.self, matching: [], options: .nearCache)
        let changes = Recorder(
            b.changes(of: Product.self).map { change -> String in
                switch change {
                case .inserted(let value): "inserted \(value.title)"
                case .updated(let value): "updated \(value.title)"
                case .deleted(let id): "deleted \(id)"
                default: "\(change)"
                }
            })
        defer { changes.cancel() }
        // Each write reaches B before the next is made: B reads a record it hears of from the server, so a
        // value that changed meanwhile would arrive as the newer one (that is the design, not under test here).
        try await a.save(Product.sample(1))
        #expect(await changes.eventually { $0 == ["inserted Product 1"] }, "\(changes.values)")
        var updated = Product.sample(1)
        updated.title = "changed"
        try await a.save(updated)
        #expect(await changes.eventually { $0.count == 2 }, "\(changes.values)")
        try await a.delete(Product.self, id: "sku_1")
        #expect(await changes.eventually { $0.count == 3 }, "\(changes.values)")
        #expect(changes.values == ["inserted Product 1", "updated changed", "deleted sku_1"])
        #expect(try await b.fetch(Product.self, id: "sku_1") == nil)
    }

    @Test func liveQueriesOfAnotherInstanceFollowWrites() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        let updates = b.updates(
            of: Product.self, matching: [.equals("category", "books")], orderedBy: .ascending("price"))
        let (first, last) = try await withTimeout {
            var iterator = updates.makeAsyncIterator()
            let first = try await iterator.next()?.map(\.id)
            try await a.save(contentsOf: (0..<9).map(Product.sample))
            var last: [String] = []
            while let result = try await iterator.next() {
                last = result.map(\.id)
                if last.count == 3 { break }
            }
            return (first, last)
        }
        #expect(first == [])
        #expect(last == ["sku_0", "sku_3", "sku_6"])
    }

    @Test func expiryHoldsOnTheServerAndEveryInstance() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        try await a.save(Product.sample(1), expiration: .hours(1))
        try await a.save(Product.sample(2))
        // Both instances hold the same expiry (metadata reads the server on a local miss).
        let expiresAt = try await b.metadata(Product.self, id: "sku_1")?.expiresAt
        #expect(expiresAt != nil)
        #expect(try await a.metadata(Product.self, id: "sku_1")?.expiresAt == expiresAt)
        #expect(try await b.fetch(Product.self, id: "sku_1") != nil)
        try await a.setExpiration(Product.self, id: "sku_1", .seconds(0.3))
        #expect(
            try await waitUntil {
                let left = try await a.fetch(Product.self, id: "sku_1")
                let right = try await b.fetch(Product.self, id: "sku_1")
                return left == nil && right == nil
            })
        // The server holds neither the record nor its index members.
        let options = FetchOptions(scope: .shared)
        #expect(try await a.count(Product.self, matching: [.atLeast("price", 0)], options: options) == 1)
        let members = try await a.sharedTier?.connection.call(
            [
                Array("ZRANGE".utf8), a.sharedTier?.layout.ids(type: SharedTierLayout.escape("Product")) ?? [],
                Array("0".utf8), Array("-1".utf8),
            ])
        #expect(members == .array([.bulk(Array("sku_2".utf8))]))
        let ttl = try await a.sharedTier?.connection.call(
            [
                Array("EXISTS".utf8),
                a.sharedTier?.layout.record(type: Array("Product".utf8), id: Array("sku_1".utf8)) ?? [],
            ])
        #expect(ttl == .integer(0))
    }

    @Test func namespacesNeverMeet() async throws {
        var other = SharedTestServer.configuration()
        other.namespace = tier.namespace + ":r:Product"
        let a = try await sharedStore(tier)
        let b = try await sharedStore(other)
        try await a.save(Product.sample(1))
        #expect(try await b.fetch(Product.self, id: "sku_1") == nil)
        #expect(try await b.count(Product.self, matching: [], options: FetchOptions(scope: .shared)) == 0)
        try await b.save(Product.sample(2))
        #expect(try await a.fetch(Product.self, id: "sku_2") == nil)
    }

    @Test func deleteAllAndSetExpirationAndUpdateGoThroughTheServer() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        try await a.save(contentsOf: (0..<5).map(Product.sample))
        let updated = try await b.update(Product.self, id: "sku_2") { $0.title = "by b" }
        #expect(updated.title == "by b")
        #expect(try await waitUntil { try await a.fetch(Product.self, id: "sku_2")?.title == "by b" })
        try await b.setExpiration(Product.self, id: "sku_3", .seconds(0.2))
        #expect(try await waitUntil { try await a.fetch(Product.self, id: "sku_3") == nil })
        await #expect(throws: LocalStorageError.notFound(id: "nope")) {
            try await a.update(Product.self, id: "nope") { $0.title = "x" }
        }
        try await a.deleteAll(Product.self)
        #expect(try await waitUntil { try await b.count(Product.self, matching: [], options: .nearCache) == 0 })
        #expect(try await b.fetch(Product.self, id: "sku_1") == nil)
        #expect(try await b.count(Product.self, matching: [], options: FetchOptions(scope: .shared)) == 0)
    }

    @Test func writeTransactionsSayTheyDoNotReachTheSharedTier() async throws {
        let a = try await sharedStore(tier)
        await #expect(throws: LocalStorageError.sharedTierUnavailable(LocalStorage.writeTransactionsNotShared)) {
            try await a.write { tx in try tx.save(Product.sample(1)) }
        }
        #expect(try await a.fetch(Product.self, id: "sku_1") == nil)
        // A read transaction's snapshot would be the near cache alone: a record only the server holds would read
        // as nil there. It is refused the same way.
        let b = try await sharedStore(tier)
        try await b.save(Product.sample(2))
        let c = try await sharedStore(tier)
        #expect(try await c.fetch(Product.self, id: "sku_2") != nil)
        await #expect(throws: LocalStorageError.sharedTierUnavailable(LocalStorage.readTransactionsNotShared)) {
            try await c.read { tx in try tx.fetch(Product.self, id: "sku_2") }
        }
    }

    @Test func sharedScopeWithoutASharedTierIsAnInvalidQuery() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        await #expect(throws: LocalStorageError.self) {
            try await storage.fetch(Product.self, matching: [], options: FetchOptions(scope: .shared))
        }
    }
}

/// Failures: wrong passwords, unreachable ports, an unreachable server for writes and reads.
@Suite(.enabled(if: RedisTestServer.binary != nil || SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierFailureTests {
    @Test func anUnreachablePortGivesAClearErrorAndWritesChangeNothing() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let port = refusing.port
        var tier = SharedTierConfiguration(
            url: try #require(URL(string: "redis://127.0.0.1:\(port)/0")), namespace: "x")
        tier.connectTimeout = .milliseconds(300)
        let storage = try await sharedStore(tier)
        let error = await #expect(throws: LocalStorageError.self) { try await storage.save(Product.sample(1)) }
        #expect("\(String(describing: error))".contains("127.0.0.1:\(port)"))
        // An instance that never was in sync serves no local record; a local miss throws instead of answering nil.
        await #expect(throws: LocalStorageError.self) {
            try await storage.count(Product.self, matching: [], options: .nearCache)
        }
        await #expect(throws: LocalStorageError.self) { try await storage.fetch(Product.self, id: "sku_1") }
    }

    @Test func aWrongPasswordIsRefusedClearlyAndNeverLogged() async throws {
        let server = try await RedisTestServer.started(password: "right-horse-battery")
        defer { server.stop() }
        let logger = CapturingLogger()
        let secret = "wrong-staple-\(UUID().uuidString)"
        var tier = server.configuration(namespace: "p", password: secret)
        tier.url = try #require(URL(string: "redis://:\(secret)@127.0.0.1:\(server.port)/0"))
        let storage = try await sharedStore(tier, logger: logger)
        let error = await #expect(throws: LocalStorageError.self) { try await storage.save(Product.sample(1)) }
        let text = "\(String(describing: error))"
        #expect(text.contains("AUTH"))
        #expect(text.contains("WRONGPASS"))
        #expect(!text.contains(secret))
        #expect(try await waitUntil { logger.all.contains { $0.contains("Lost the shared tier") } })
        #expect(!logger.all.isEmpty)
        #expect(logger.all.allSatisfy { !$0.contains(secret) })
        #expect(!tier.redactedURL.contains(secret))

        // No password at all: the server says it wants one, and the message says where to set it.
        let none = try await sharedStore(server.configuration(namespace: "p", password: nil).withoutPassword())
        let missing = await #expect(throws: LocalStorageError.self) { try await none.save(Product.sample(1)) }
        #expect("\(String(describing: missing))".contains("NOAUTH"))

        // The right one works.
        let right = try await sharedStore(server.configuration(namespace: "p"))
        try await right.save(Product.sample(1))
        #expect(try await right.fetch(Product.self, id: "sku_1") == Product.sample(1))
    }
}

extension SharedTierConfiguration {
    func withoutPassword() -> SharedTierConfiguration {
        var copy = self
        copy.password = nil
        return copy
    }
}

/// An instance's own writes against its applier: the applier takes the instance's own notices too, and one
/// that comes after a later own write must not take the local copy back to the older value.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierOwnWriteTests {
    let tier = SharedTestServer.configuration()

    /// Lets a given number of change notices through to the applier and holds the rest, except while
    /// something waits for the tier's state (`bypass`): an own write that came while the tier was catching up
    /// (a reconnection on a loaded machine) waits for the applier, which a held notice would hold for ever.
    /// The scenario is then not the one under test, but what the test checks (no notice takes a record back)
    /// still holds.
    final class NoticeGate: Sendable {
        private let state = Mutex<(permits: Int, held: [CheckedContinuation<Void, Never>])>((0, []))
        private let bypass: (@Sendable () -> Bool)?

        init(bypass: (@Sendable () -> Bool)? = nil) { self.bypass = bypass }

        /// A gate that holds `tier`'s notices from now on, but lets them through while anything waits on the tier.
        static func holding(_ tier: SharedTier) -> NoticeGate {
            let gate = NoticeGate(bypass: { tier.waiterCount > 0 })
            tier.beforeNotice.withLock { $0 = { await gate.passUnlessBypassed() } }
            return gate
        }

        /// `pass()`, or, with a `bypass`, waits (polling) for a permit or the bypass.
        func passUnlessBypassed() async {
            guard let bypass else { return await pass() }
            while true {
                let permitted = state.withLock { state -> Bool in
                    guard state.permits > 0 else { return false }
                    state.permits -= 1
                    return true
                }
                if permitted || bypass() { return }
                do {
                    try await Task.sleep(for: .milliseconds(2))
                } catch {
                    return
                }
            }
        }

        func pass() async {
            await withCheckedContinuation { continuation in
                let go = state.withLock { state -> Bool in
                    guard state.permits > 0 else {
                        state.held.append(continuation)
                        return false
                    }
                    state.permits -= 1
                    return true
                }
                if go { continuation.resume() }
            }
        }

        func release(_ count: Int) {
            let going = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.permits += count
                let taken = min(state.permits, state.held.count)
                state.permits -= taken
                defer { state.held.removeFirst(taken) }
                return Array(state.held.prefix(taken))
            }
            for continuation in going { continuation.resume() }
        }
    }

    // A time limit: a test that holds the applier hangs instead of failing if an own write waits for it.
    @Test(.timeLimit(.minutes(10))) func anOlderNoticeOfAnOwnWriteDoesNotTakeTheRecordBack() async throws {
        let a = try await sharedStore(tier)
        let tierA = try #require(a.sharedTier)
        // Own writes are written locally at once only while the tier is live (not catching up).
        #expect(try await waitUntil { tierA.phase == .live })
        let gate = NoticeGate.holding(tierA)
        defer {
            tierA.beforeNotice.withLock { $0 = nil }
            gate.release(1_000)
        }
        let before = tierA.appliedPosition
        var first = Product.sample(1)
        first.title = "v1"
        var second = first
        second.title = "v2"
        try await a.save(first)
        try await a.save(second)
        #expect(try await a.fetch(Product.self, id: first.id)?.title == "v2")
        // v1's notice alone reaches the applier: the local copy stays at v2.
        gate.release(1)
        #expect(try await waitUntil { tierA.appliedPosition > before })
        #expect(try await a.fetch(Product.self, id: first.id)?.title == "v2")
        gate.release(1)
        #expect(try await waitUntil { tierA.appliedPosition > before + 1 })
        #expect(try await a.fetch(Product.self, id: first.id)?.title == "v2")
        // A delete then a save of the same id, notices held: the delete's notice does not remove the save.
        try await a.delete(Product.self, id: first.id)
        try await a.save(first)
        gate.release(1)
        #expect(try await waitUntil { tierA.appliedPosition > before + 2 })
        #expect(try await a.fetch(Product.self, id: first.id)?.title == "v1")
        // A clear, then a save, notices held: the clear's notice takes the saved copy away (it was written
        // ahead of it), and the save's own notice must bring it back, not be skipped as already applied.
        gate.release(1_000)
        #expect(try await waitUntil { tierA.appliedPosition >= before + 4 })  // v1, v2, the delete, the save
        let held = NoticeGate.holding(tierA)
        defer { held.release(1_000) }
        let mark = tierA.appliedPosition
        try await a.deleteAll(Product.self)
        try await a.save(second)
        held.release(2)
        #expect(try await waitUntil { tierA.appliedPosition >= mark + 2 })
        #expect(try await waitUntil { try await a.statistics(for: Product.self).records == 1 })
        #expect(try await a.fetch(Product.self, id: first.id)?.title == "v2")
    }

    /// A server that restarts from an older snapshot (or fails over to a replica that was behind) loses its
    /// last changes and counts past them again. When the count came back to this instance's position (or past
    /// it) before the instance caught up, the catch-up took the new changes for the ones it had: it kept the
    /// lost records for ever. It now checks the change at its position against the one it took there.
    @Test(.timeLimit(.minutes(5))) func aServerThatLostChangesAndCountedPastThemIsCaughtUpByDropping() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        let tierA = try #require(a.sharedTier)
        _ = try await a.count(Product.self, matching: [], options: .nearCache)  // A knows the type.
        // A first change: the count going back to 0 would start a new history (an epoch), which is caught.
        try await b.save(Product.sample(9))
        #expect(try await waitUntil { tierA.appliedPosition >= 1 })
        let start = tierA.appliedPosition
        try await b.save(Product.sample(1))
        try await b.save(Product.sample(2))
        #expect(try await waitUntil { tierA.appliedPosition >= start + 2 })
        #expect(try await waitUntil { try await a.count(Product.self, matching: [], options: .nearCache) == 3 })
        // The server loses both changes: its count, its log and the records go back to how they were.
        let type = SharedTierLayout.escape(Product.storageName)
        for command in [
            ["SET", String(decoding: tierA.layout.sequence, as: UTF8.self), "\(start)"],
            ["ZREMRANGEBYSCORE", String(decoding: tierA.layout.log, as: UTF8.self), "(\(start)", "+inf"],
        ] {
            _ = try await tierA.connection.call(command.map { Array($0.utf8) })
        }
        for id in ["sku_1", "sku_2"] {
            _ = try await tierA.connection.call([
                Array("DEL".utf8), tierA.layout.record(type: type, id: Array(id.utf8)),
            ])
        }
        // Other changes take the lost sequences; A ignores their notices (it is past them) until it catches up.
        try await b.save(Product.sample(3))
        try await b.save(Product.sample(4))
        let catchUps = tierA.state.withLock { $0.catchUps }
        tierA.events.yield(.catchUp)  // As after a lost connection.
        #expect(try await waitUntil { tierA.state.withLock { $0.catchUps > catchUps } && tierA.phase == .live })
        #expect(try await a.fetch(Product.self, id: "sku_1") == nil)
        #expect(try await a.fetch(Product.self, id: "sku_2") == nil)
        #expect(try await a.fetch(Product.self, id: "sku_4") == Product.sample(4))
    }
}
