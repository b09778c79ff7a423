import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// Loading through the cache on two instances (stores in different directories) sharing one namespace of the
/// suite's server: one load per id among both, a holder that never finishes taken over when its lease ends
/// on the server, and a write on one instance winning over a load on the other.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierLoadThroughTests {
    let tier = SharedTestServer.configuration()

    private func instance() async throws -> LocalStorage { try await diskSharedStore(tier) }

    private static func serverLease(_ storage: LocalStorage, id: String) async throws -> SharedTierLease? {
        try await serverLeaseOf(Product.self, id: id, in: storage)
    }

    private static func product(_ id: String, _ title: String) -> Product {
        Product(id: id, title: title, category: "books", price: 1, rating: 1)
    }

    /// `callers` tasks fetching `id` through `storage`, loading with `gate` held.
    private static func callers(
        _ count: Int, of storage: LocalStorage, id: String, title: String, gate: LoadGate,
        policy: LoadPolicy = LoadPolicy(loadTimeout: .seconds(600))
    ) -> [Task<Product?, any Error>] {
        (0..<count).map { _ in
            Task {
                try await storage.fetch(Product.self, id: id, policy: policy) { id in
                    await gate.pass()
                    return Product(id: id, title: title, category: "books", price: 1, rating: 1)
                }
            }
        }
    }

    /// review-79: a give-back that reaches the server before the abandoned request (sent on a connection since
    /// dropped, which the network may deliver later) marks that request, so it takes no lease when it arrives;
    /// another load's request still does, and a held lease is given back.
    @Test func aLeaseRequestMarkedAbandonedTakesNoLease() async throws {
        let storage = try await instance()
        let tier = try #require(storage.sharedTier)
        let schema = try await storage.core.schema(for: Product.self)
        let (id, key) = ("sku_9", Array("sku_9".utf8))
        let leaseKey = tier.leaseKey(type: schema.name, id: key)
        #expect(try await tier.abandonLease(type: schema.name, id: id, token: 7, keepFor: .seconds(600)) == false)
        let late = try await tier.acquireLease(
            type: schema.name, id: key, token: 7, timeout: .seconds(600), condition: .noRecord)
        #expect(late != .acquired, "the abandoned request took the lease")
        #expect(try await tier.connection.call([Array("GET".utf8), leaseKey]).bytes == nil)
        let other = try await tier.acquireLease(
            type: schema.name, id: key, token: 8, timeout: .seconds(600), condition: .noRecord)
        #expect(other == .acquired)
        #expect(try await tier.abandonLease(type: schema.name, id: id, token: 8, keepFor: .seconds(600)))
        #expect(try await tier.connection.call([Array("GET".utf8), leaseKey]).bytes == nil)
    }

    /// The refresh of a record its source no longer has deletes it on the server only while its lease holds, in
    /// one script: with a lease check and a delete in two round trips, a save of the id between them was
    /// deleted with the stale record (review-63 #7).
    @Test func aLeasedDeleteDeletesOnlyWhileItsLeaseHolds() async throws {
        let storage = try await instance()
        let tier = try #require(storage.sharedTier)
        try await storage.save(Product.sample(1))
        let schema = try await storage.core.schema(for: Product.self)
        let key = tier.leaseKey(type: schema.name, id: Array("sku_1".utf8))
        let mine = SharedTierLease(kind: .lease, token: 7).bytes
        // No lease (a write ended it), then another load's lease: nothing is deleted.
        await #expect(throws: SharedTierLeaseLost.self) {
            try await tier.delete(id: "sku_1", schema: schema, lease: (key, mine))
        }
        _ = try await tier.connection.call([Array("SET".utf8), key, SharedTierLease(kind: .lease, token: 8).bytes])
        await #expect(throws: SharedTierLeaseLost.self) {
            try await tier.delete(id: "sku_1", schema: schema, lease: (key, mine))
        }
        #expect(try await tier.record(type: schema.name, id: Array("sku_1".utf8)) != nil)
        // Its own lease: the record goes, and the lease becomes the ended marker of its token.
        _ = try await tier.connection.call([Array("SET".utf8), key, mine])
        _ = try await tier.delete(id: "sku_1", schema: schema, lease: (key, mine))
        #expect(try await tier.record(type: schema.name, id: Array("sku_1".utf8)) == nil)
        let left = try await tier.connection.call([Array("GET".utf8), key]).bytes
        #expect(left.flatMap(SharedTierLease.init) == SharedTierLease(kind: .absent, token: 7, rememberUntil: .min))
    }

    /// What a write of an id leaves of the entry on its lease key on the server. A delete voids it as the store
    /// does: a lease becomes the ended marker of its token, kept 60 s (not the lease's century), a remembered nil in
    /// force goes, an ended one stays for its waiters, anything else goes (a key of another kind too, without
    /// failing the delete). A save removes the entry: the load's callers find the record.
    @Test(arguments: [false, true]) func aWriteVoidsTheServersLeaseEntry(deletes: Bool) async throws {
        let storage = try await instance()
        let tier = try #require(storage.sharedTier)
        let schema = try await storage.core.schema(for: Product.self)
        let key = tier.leaseKey(type: schema.name, id: Array("sku_2".utf8))
        let now = storage.core.clock.wallNanoseconds()
        let ended = SharedTierLease(kind: .absent, token: 3, rememberUntil: now - 1_000_000_000)
        let cases: [(String, [UInt8]?, SharedTierLease?)] = [
            (
                "a lease", SharedTierLease(kind: .lease, token: 2).bytes,
                SharedTierLease(kind: .absent, token: 2, rememberUntil: .min)
            ),
            (
                "a nil in force",
                SharedTierLease(kind: .absent, token: 4, rememberUntil: now + 3_600_000_000_000).bytes, nil
            ),
            ("an ended nil", ended.bytes, ended),
            ("an unreadable value", Array("unreadable".utf8), nil),
            ("a hash", nil, nil),
        ]
        for (name, before, after) in cases {
            try await storage.save(Product.sample(2))
            if let before {
                _ = try await tier.connection.call([
                    Array("SET".utf8), key, before, Array("PX".utf8), Array("3000000000000".utf8),
                ])
            } else {
                _ = try await tier.connection.call([Array("HSET".utf8), key, Array("f".utf8), Array("v".utf8)])
            }
            if deletes {
                try await storage.delete(Product.self, id: "sku_2")
                #expect(try await tier.record(type: schema.name, id: Array("sku_2".utf8)) == nil, "\(name)")
            } else {
                try await storage.save(Product(id: "sku_2", title: "again", category: "books", price: 3, rating: 3))
            }
            let left = try await tier.connection.call([Array("GET".utf8), key]).bytes
            let expected = deletes ? after : nil
            #expect(left.flatMap(SharedTierLease.init) == expected, "\(name)")
            #expect((left == nil) == (expected == nil), "\(name)")
            if expected?.token == 2 {
                let ttl = try await tier.connection.call([Array("PTTL".utf8), key]).int ?? -1
                #expect(ttl > 0 && ttl <= 60_000, "\(name): \(ttl) ms")
            }
            _ = try await tier.connection.call([Array("DEL".utf8), key])
        }
    }

    @Test func manyCallersOnTwoInstancesLoadOnceInAll() async throws {
        let a = try await instance()
        let b = try await instance()
        let gate = LoadGate()  // counts the loads of both instances
        let onA = Self.callers(200, of: a, id: "sku_cold", title: "loaded", gate: gate)
        let onB = Self.callers(200, of: b, id: "sku_cold", title: "loaded", gate: gate)
        try await eventually("every caller waiting") {
            a.core.loads.waiterCount == 200 && b.core.loads.waiterCount == 200 && gate.loads >= 1
        }
        gate.open()
        for caller in onA + onB { #expect(try await caller.value?.title == "loaded") }
        #expect(gate.loads == 1)
        #expect(try await a.fetch(Product.self, id: "sku_cold")?.title == "loaded")
        #expect(try await b.fetch(Product.self, id: "sku_cold")?.title == "loaded")
        #expect(try await Self.serverLease(a, id: "sku_cold") == nil)  // the write ended the lease
    }

    @Test func aHolderThatNeverFinishesIsTakenOverWhenItsLeaseEnds() async throws {
        let a = try await instance()
        let b = try await instance()
        // Each instance's first use of the type (its description, its databases, the namespace's key check) comes
        // first: A's ten seconds below start with its load, not with that work on a machine the whole suite loads.
        #expect(try await a.fetch(Product.self, id: "sku_warm") == nil)
        #expect(try await b.fetch(Product.self, id: "sku_warm") == nil)
        let stuck = LoadGate()  // never opened while B runs: A's load never completes
        // A's lease lives ten seconds on the server's clock, which a loaded machine does not slow: A's loader
        // reads it at once, before anything else can run late. A's own caller gives up then.
        let heldByA = Noted<SharedTierLease?>(nil)
        let aEnded = Noted<Bool>(false)
        let onA = Task {
            defer { aEnded.value.withLock { $0 = true } }
            return try await a.fetch(
                Product.self, id: "sku_stuck", policy: LoadPolicy(loadTimeout: .seconds(10))
            ) { id in
                let lease = try await Self.serverLease(a, id: id)
                heldByA.value.withLock { $0 = lease }
                await stuck.pass()
                return Self.product(id, "from A")
            }
        }
        // A fetch that ended before its load started fails here with what it threw, not after a long wait.
        try await eventually("A's load to start") { stuck.loads > 0 || aEnded.value.withLock { $0 } }
        if stuck.loads == 0 {
            let outcome = await onA.result
            try #require(stuck.loads > 0, "A's fetch ended before its load started: \(outcome)")
        }
        let held = try #require(heldByA.value.withLock { $0 })
        #expect(held.kind == .lease)
        let seen = Noted<SharedTierLease?>(nil)
        let gate = LoadGate(open: true)
        let policy = LoadPolicy(loadTimeout: .seconds(600))
        let onB = (0..<10).map { _ in
            Task {
                try await b.fetch(Product.self, id: "sku_stuck", policy: policy) { id in
                    await gate.pass()
                    let lease = try await Self.serverLease(b, id: id)
                    seen.value.withLock { $0 = lease }
                    return Self.product(id, "from B")
                }
            }
        }
        for caller in onB { #expect(try await caller.value?.title == "from B") }
        #expect(gate.loads == 1)
        // B loaded under a lease of its own, taken once A's had ended on the server.
        let taken = try #require(seen.value.withLock { $0 })
        #expect(taken.kind == .lease && taken.token != held.token)
        let outcome = await onA.result
        #expect(throws: LocalStorageError.loadTimedOut(id: "sku_stuck")) { try outcome.get() }
        // A's load finishing late finds its lease gone: it writes nothing over B's record.
        stuck.open()
        #expect(try await a.fetch(Product.self, id: "sku_stuck")?.title == "from B")
        #expect(try await b.fetch(Product.self, id: "sku_stuck")?.title == "from B")
        #expect(stuck.loads == 1)
    }

    /// `updates(of:id:)` on an instance that does not hold the record starts with the server's value (never
    /// a false nil), then follows another instance's writes.
    @Test func updatesOfARecordOnlyTheServerHoldsStartWithItsValue() async throws {
        let a = try await instance()
        let b = try await instance()
        try await a.save(Self.product("sku_far", "first"))
        let seen = Noted<[String?]>([])
        let watcher = Task {
            for try await value in b.updates(of: Product.self, id: "sku_far") {
                seen.value.withLock { $0.append(value?.title) }
            }
        }
        defer { watcher.cancel() }
        try await eventually("the first value") { seen.value.withLock { !$0.isEmpty } }
        #expect(seen.value.withLock { $0 }.first == "first")
        try await a.save(Self.product("sku_far", "second"))
        try await eventually("the second value") { seen.value.withLock { $0.last == "second" } }
        try await a.delete(Product.self, id: "sku_far")
        try await eventually("the delete") { seen.value.withLock { $0.count >= 3 && $0.last == .some(nil) } }
        #expect(seen.value.withLock { $0 } == ["first", "second", nil])
    }

    /// `updates(of:id:)` started on an instance that holds an older value while another instance's newer
    /// write is on its way: the stream may start with the older value, but the newer one follows (a helper
    /// trying the API saw the stream stop at the older value in 4 of 6 runs).
    @Test func updatesOfARecordHeldStaleFollowTheWriteOnItsWay() async throws {
        let a = try await instance()
        let b = try await instance()
        for round in 0..<8 {
            let id = "sku_race\(round)"
            try await a.save(Self.product(id, "first"))
            #expect(try await b.fetch(Product.self, id: id)?.title == "first")
            try await a.save(Self.product(id, "second"))
            let seen = Noted<[String?]>([])
            let watcher = Task {
                for try await value in b.updates(of: Product.self, id: id) {
                    seen.value.withLock { $0.append(value?.title) }
                }
            }
            defer { watcher.cancel() }
            try await eventually("round \(round): the newer value") { seen.value.withLock { $0.last == "second" } }
        }
    }

    /// The stream of `updates(of:id:)` keeps its instance open: released by its caller, the instance stopped its
    /// shared tier, and the stream served the local copy for ever, missing every other instance's write.
    @Test func updatesOfAnIDKeepTheirInstanceOpen() async throws {
        let a = try await instance()
        try await a.save(Self.product("sku_kept_open", "first"))
        let seen = Noted<[String?]>([])
        let stream = try await instance().updates(of: Product.self, id: "sku_kept_open")  // no other reference
        let watcher = Task {
            for try await value in stream { seen.value.withLock { $0.append(value?.title) } }
        }
        defer { watcher.cancel() }
        try await eventually("the first value") { seen.value.withLock { $0.last == "first" } }
        try await a.save(Self.product("sku_kept_open", "second"))
        try await eventually("the second value") { seen.value.withLock { $0.last == "second" } }
    }

    @Test func aSaveOnAnotherInstanceWinsOverALoad() async throws {
        let a = try await instance()
        let b = try await instance()
        let gate = LoadGate()
        let onA = Self.callers(5, of: a, id: "sku_raced", title: "loaded", gate: gate)
        try await gate.waitForLoad()
        try await b.save(Self.product("sku_raced", "saved on B"))
        #expect(try await Self.serverLease(a, id: "sku_raced") == nil)  // the save ended A's lease
        gate.open()
        for caller in onA { #expect(try await caller.value?.title == "saved on B") }
        #expect(gate.loads == 1)
        #expect(try await a.fetch(Product.self, id: "sku_raced")?.title == "saved on B")
        #expect(try await b.fetch(Product.self, id: "sku_raced")?.title == "saved on B")
        let onServer = try await a.fetch(Product.self, options: FetchOptions(scope: .shared))
        #expect(onServer.map(\.title) == ["saved on B"])
    }

    /// The save answers A's callers as soon as it reaches A's store, whatever the loader does afterwards (here it
    /// throws): they do not wait for it, nor get its error (trial86 #5, with a shared tier).
    @Test func aSaveOnAnotherInstanceAnswersTheLoadsCallersAtOnce() async throws {
        struct SourceDown: Error {}
        let a = try await instance()
        let b = try await instance()
        let gate = LoadGate()
        let answered = DecodeCounter()  // a Sendable counter
        let onA = (0..<5).map { _ in
            Task {
                defer { answered.increment() }
                return try await a.fetch(Product.self, id: "sku_thrown", policy: LoadPolicy(loadTimeout: .seconds(600)))
                {
                    _ -> Product? in
                    await gate.pass()
                    throw SourceDown()
                }
            }
        }
        try await gate.waitForLoad()
        try await b.save(Self.product("sku_thrown", "saved on B"))
        try await eventually("A's callers answered") { answered.value == 5 }
        for caller in onA { #expect(try await caller.value?.title == "saved on B") }
        gate.open()
        #expect(gate.loads == 1)
        #expect(try await Self.serverLease(a, id: "sku_thrown") == nil)
        #expect(try await a.fetch(Product.self, id: "sku_thrown")?.title == "saved on B")
    }

    /// A save and then a delete of the id during a load win over it: the save's put ends the lease (it deletes the
    /// key), the delete finds no lease to mark, and the load's result is not what its callers get (review-92 F2: an
    /// empty lease key was taken for a server that lost its data, and the loaded value came back).
    /// A's notices are held, so the load ends before A's store hears of the writes and its leased put finds the key
    /// empty.
    @Test func aSaveThenADeleteOnAnotherInstanceWinOverALoad() async throws {
        let a = try await instance()
        let b = try await instance()
        let aTier = try #require(a.sharedTier)
        let notices = SharedTierOwnWriteTests.NoticeGate()
        aTier.beforeNotice.withLock { $0 = { await notices.pass() } }
        defer {
            aTier.beforeNotice.withLock { $0 = nil }
            notices.release(1_000)
        }
        let gate = LoadGate()
        let onA = Self.callers(3, of: a, id: "sku_gone", title: "loaded", gate: gate)
        try await gate.waitForLoad()
        try await b.save(Self.product("sku_gone", "saved on B"))
        try await b.delete(Product.self, id: "sku_gone")
        gate.open()
        for caller in onA { #expect(try await caller.value == nil) }
        #expect(gate.loads == 1)
    }

    @Test func aDeleteAllOnAnotherInstanceWinsOverALoad() async throws {
        let a = try await instance()
        let b = try await instance()
        try await b.save(Self.product("sku_kept", "saved before"))
        let gate = LoadGate()
        let onA = Self.callers(5, of: a, id: "sku_cleared", title: "loaded", gate: gate)
        try await gate.waitForLoad()
        #expect(try await Self.serverLease(a, id: "sku_cleared") != nil)
        try await b.deleteAll(Product.self)
        #expect(try await Self.serverLease(a, id: "sku_cleared")?.kind == .absent)  // the clear voided A's lease
        gate.open()
        for caller in onA { #expect(try await caller.value == nil) }
        #expect(gate.loads == 1)
        // The load's result, older than the clear, was not stored anywhere.
        #expect(try await a.fetch(Product.self, id: "sku_cleared") == nil)
        #expect(try await b.fetch(Product.self, id: "sku_cleared") == nil)
        #expect(try await a.fetch(Product.self, options: FetchOptions(scope: .shared)).isEmpty)
        // The clear reaches A's store through the server's change channel.
        #expect(try await waitUntil { try await a.count(Product.self, matching: [], options: .nearCache) == 0 })
    }

    /// A delete on a third instance voids A's load for the callers another instance has waiting on A's lease on
    /// the server: they get nil, and do not load again (the delete removed the lease, so they found no record
    /// and no lease, loaded, and stored that result over the delete).
    @Test(arguments: [false, true])
    func aDeleteOnAnotherInstanceAnswersTheCallersWaitingElsewhereWithNil(clears: Bool) async throws {
        let (a, b, c) = try await (instance(), instance(), instance())
        let id = clears ? "sku_gone_all" : "sku_gone"
        let gate = LoadGate()  // counts the loads of A and C
        let onA = Self.callers(3, of: a, id: id, title: "loaded on A", gate: gate)
        try await gate.waitForLoad()
        let answered = DecodeCounter()  // a Sendable counter
        let onC = (0..<3).map { _ in
            Task {
                defer { answered.increment() }
                return try await c.fetch(Product.self, id: id, policy: LoadPolicy(loadTimeout: .seconds(600))) { id in
                    await gate.pass()
                    return Self.product(id, "loaded on C")
                }
            }
        }
        try await eventually("C's callers waiting on A's lease") {
            c.core.loads.waiterCount == 3 && c.core.leaseWaits.load(ordering: .relaxed) == 1
        }
        if clears {
            try await b.deleteAll(Product.self)
        } else {
            try await b.delete(Product.self, id: id)
        }
        try await eventually("C's callers answered, or a second load") { answered.value == 3 || gate.loads > 1 }
        #expect(gate.loads == 1)
        gate.open()
        for caller in onC + onA { #expect(try await caller.value == nil) }
        #expect(gate.loads == 1)
        for instance in [a, b, c] { #expect(try await instance.fetch(Product.self, id: id) == nil) }
        #expect(try await a.fetch(Product.self, options: FetchOptions(scope: .shared)).isEmpty)
        // A caller that comes after the delete loads as before.
        let later = Self.callers(1, of: c, id: id, title: "loaded later", gate: gate)
        #expect(try await later[0].value?.title == "loaded later")
        #expect(gate.loads == 2)
    }

    /// A load given up at its timeout whose loader returns afterwards (as one that ignores or swallows its
    /// cancellation does) stores nothing, on the server or any instance (trial87 #2: the server's lease, taken after this
    /// store's, still held, and the late value reached every instance). The store's clock is a virtual one, so the
    /// flight is given up at once when it moves past the timeout while the server's lease has most of a minute left.
    @Test func aLoadGivenUpAtItsTimeoutStoresNothingWhenItsLoaderReturnsOnCancellation() async throws {
        let clock = VirtualClock()
        let a = try await diskSharedStore(tier, clock: clock)
        let b = try await instance()
        let gate = LoadGate()
        let caller = Task {
            try await a.fetch(Product.self, id: "sku_late", policy: LoadPolicy(loadTimeout: .seconds(60))) { id in
                await gate.pass()
                return Self.product(id, "late")
            }
        }
        try await withTimeout(.seconds(60)) { try await gate.waitForLoad() }
        #expect(try await Self.serverLease(a, id: "sku_late")?.kind == .lease)
        clock.advance(by: .seconds(61))
        await #expect(throws: LocalStorageError.loadTimedOut(id: "sku_late")) { try await caller.value }
        gate.open()  // the loader returns after its flight was given up
        // The lease on the server ends once the late result has been dealt with (stored, before).
        #expect(try await waitUntil { try await Self.serverLease(a, id: "sku_late") == nil })
        #expect(try await b.fetch(Product.self, options: FetchOptions(scope: .shared)).isEmpty)
        #expect(try await b.fetch(Product.self, id: "sku_late") == nil)
        #expect(try await a.fetch(Product.self, id: "sku_late") == nil)
    }

    /// A new expiry set on one instance while another's refresh runs and a third's waits on that refresh's lease:
    /// the waiting refresh does not load, and every instance keeps the record and the new expiry (trial87 #1: a
    /// new expiry removed the lease without changing the update time the waiting refresh compares, so it took the
    /// lease, loaded, and stored its value with the policy's expiry).
    @Test func aNewExpiryWinsOverARefreshWaitingOnAnotherInstancesLease() async throws {
        let (a, b, c) = try await (instance(), instance(), instance())
        try await a.save(Self.product("sku_ttl", "old"), expiration: .hours(1))
        for instance in [b, c] { #expect(try await instance.fetch(Product.self, id: "sku_ttl")?.title == "old") }
        let gate = LoadGate()
        let policy = LoadPolicy(expiration: .minutes(5), refreshAfter: .zero, loadTimeout: .seconds(600))
        let load: @Sendable (String) async throws -> Product? = { id in
            await gate.pass()
            return Self.product(id, "reloaded")
        }
        #expect(try await b.fetch(Product.self, id: "sku_ttl", policy: policy, load: load)?.title == "old")
        try await withTimeout(.seconds(60)) { try await gate.waitForLoad() }
        #expect(try await c.fetch(Product.self, id: "sku_ttl", policy: policy, load: load)?.title == "old")
        try await eventually("C's refresh waiting on B's lease") { c.core.leaseWaits.load(ordering: .relaxed) == 1 }
        try await a.setExpiration(Product.self, id: "sku_ttl", .hours(7))
        let expiresAt = try #require(try await a.metadata(Product.self, id: "sku_ttl")?.expiresAt)
        try await eventually("C's refresh ended, or a second load") { c.core.loads.count == 0 || gate.loads > 1 }
        #expect(gate.loads == 1)
        gate.open()
        try await eventually("B's refresh ended") { b.core.loads.count == 0 }
        #expect(gate.loads == 1)
        for instance in [a, b, c] {
            let settled = try await waitUntil {
                let title = try await instance.fetch(Product.self, id: "sku_ttl")?.title
                return try await instance.metadata(Product.self, id: "sku_ttl")?.expiresAt == expiresAt
                    && title == "old"
            }
            #expect(settled)
        }
    }

    @Test func aDeleteAllEndsTheLeasesOfItsOwnNamespaceAndTypeOnly() async throws {
        // Glob characters in the namespace are matched literally: clearing "g*[?]\\" must not end the lease
        // of namespace "gX[?]\\", which the unescaped pattern would match.
        let unique = UUID().uuidString
        let cleared = try await diskSharedStore(SharedTestServer.configuration(namespace: "g*[?]\\\(unique)"))
        let clearer = try await diskSharedStore(SharedTestServer.configuration(namespace: "g*[?]\\\(unique)"))
        let other = try await diskSharedStore(SharedTestServer.configuration(namespace: "gX[?]\\\(unique)"))
        let (gate, otherGate) = (LoadGate(), LoadGate())
        let onCleared = Self.callers(2, of: cleared, id: "sku_glob", title: "loaded", gate: gate)
        let onOther = Self.callers(2, of: other, id: "sku_glob", title: "loaded elsewhere", gate: otherGate)
        try await gate.waitForLoad()
        try await otherGate.waitForLoad()
        try await clearer.deleteAll(Product.self)
        #expect(try await Self.serverLease(cleared, id: "sku_glob")?.kind == .absent)
        #expect(try await Self.serverLease(other, id: "sku_glob")?.kind == .lease)
        gate.open()
        otherGate.open()
        for caller in onCleared { #expect(try await caller.value == nil) }
        for caller in onOther { #expect(try await caller.value?.title == "loaded elsewhere") }
        #expect(try await other.fetch(Product.self, id: "sku_glob")?.title == "loaded elsewhere")
    }

    @Test func aNilFromTheLoaderReachesTheOtherInstancesCallersAndIsRemembered() async throws {
        let a = try await instance()
        let b = try await instance()
        let gate = LoadGate()
        let policy = LoadPolicy(absentFor: .seconds(600), loadTimeout: .seconds(600))
        let load: @Sendable (String) async throws -> Product? = { _ in
            await gate.pass()
            return nil
        }
        let onA = (0..<5).map { _ in
            Task { try await a.fetch(Product.self, id: "sku_none", policy: policy, load: load) }
        }
        try await gate.waitForLoad()
        let onB = (0..<5).map { _ in
            Task { try await b.fetch(Product.self, id: "sku_none", policy: policy, load: load) }
        }
        try await eventually("B's callers waiting") { b.core.loads.waiterCount == 5 }
        gate.open()
        for caller in onA + onB { #expect(try await caller.value == nil) }
        #expect(gate.loads == 1)
        // Remembered on the server: a later call on B returns nil without loading.
        #expect(try await b.fetch(Product.self, id: "sku_none", policy: policy, load: load) == nil)
        #expect(gate.loads == 1)
        #expect(try await b.count(Product.self, matching: [], options: .nearCache) == 0)
        // A save ends the remembered nil everywhere.
        try await a.save(Self.product("sku_none", "now there"))
        #expect(try await b.fetch(Product.self, id: "sku_none", policy: policy, load: load)?.title == "now there")
        #expect(gate.loads == 1)
    }

    @Test func aStaleRecordIsReloadedOnceForBothInstances() async throws {
        let a = try await instance()
        let b = try await instance()
        try await a.save(Self.product("sku_old", "old"))
        #expect(try await b.fetch(Product.self, id: "sku_old")?.title == "old")
        let gate = LoadGate()
        let policy = LoadPolicy(refreshAfter: .zero, loadTimeout: .seconds(600))
        let load: @Sendable (String) async throws -> Product? = { id in
            await gate.pass()
            return Self.product(id, "new")
        }
        // Both are served the stale record at once; A's reload runs, B's waits on A's lease.
        #expect(try await a.fetch(Product.self, id: "sku_old", policy: policy, load: load)?.title == "old")
        try await withTimeout(.seconds(60)) { try await gate.waitForLoad() }
        #expect(try await b.fetch(Product.self, id: "sku_old", policy: policy, load: load)?.title == "old")
        try await eventually("B's reload waiting on A's lease") {
            b.core.loads.count == 1 && (b.core.hub.subscriberCount == 2 || gate.loads > 1)
        }
        gate.open()
        #expect(try await waitUntil { try await b.fetch(Product.self, id: "sku_old")?.title == "new" })
        #expect(try await waitUntil { b.core.loads.count == 0 && a.core.loads.count == 0 })
        #expect(gate.loads == 1)
        #expect(try await a.fetch(Product.self, id: "sku_old")?.title == "new")
    }

    /// A refresh whose source no longer has the record deletes it on every instance (under its lease, in one
    /// script).
    @Test func aRefreshThatFindsNothingDeletesTheRecordEverywhere() async throws {
        let a = try await instance()
        let b = try await instance()
        try await a.save(Self.product("sku_gone", "old"))
        #expect(try await b.fetch(Product.self, id: "sku_gone")?.title == "old")
        let policy = LoadPolicy(refreshAfter: .zero, loadTimeout: .seconds(600))
        #expect(try await a.fetch(Product.self, id: "sku_gone", policy: policy) { _ in nil }?.title == "old")
        #expect(try await waitUntil { try await a.fetch(Product.self, id: "sku_gone") == nil })
        #expect(try await waitUntil { try await b.fetch(Product.self, id: "sku_gone") == nil })
        #expect(try await waitUntil { a.core.loads.count == 0 })
    }

    @Test func aFailedLoadLetsTheOtherInstanceLoadAtOnce() async throws {
        let a = try await instance()
        let b = try await instance()
        let failing = LoadGate()
        let failed = Noted(false)
        let policy = LoadPolicy(loadTimeout: .seconds(600))
        let onA = Task {
            try await a.fetch(Product.self, id: "sku_flaky", policy: policy) { _ in
                await failing.pass()
                failed.value.withLock { $0 = true }
                throw CatalogError(code: 503)
            }
        }
        try await failing.waitForLoad()
        let gate = LoadGate(open: true)
        let afterFailure = Noted<Bool?>(nil)
        let onB = (0..<5).map { _ in
            Task {
                try await b.fetch(Product.self, id: "sku_flaky", policy: policy) { id in
                    await gate.pass()
                    afterFailure.value.withLock { $0 = failed.value.withLock { $0 } }
                    return Self.product(id, "from B")
                }
            }
        }
        // B's load waits on A's lease: it watches for its end (a second watch, besides the one for this
        // store's lease).
        try await eventually("B waiting on A's lease") {
            b.core.loads.waiterCount == 5 && b.core.hub.subscriberCount == 2
        }
        failing.open()
        let outcome = await onA.result
        #expect(throws: CatalogError(code: 503)) { try outcome.get() }
        for caller in onB { #expect(try await caller.value?.title == "from B") }
        #expect(gate.loads == 1)
        #expect(afterFailure.value.withLock { $0 } == true)  // B loaded only once A's load had failed
    }
}

/// A store on disk in a fresh directory whose shared tier is `tier`, once it is in sync.
func diskSharedStore(
    _ tier: SharedTierConfiguration, clock: VirtualClock? = nil, directory: URL = temporaryDirectory()
) async throws -> LocalStorage {
    var configuration = diskConfiguration(directory)
    if let clock { configuration.clock = clock }
    var tier = tier
    tier.maxStaleness = .seconds(30)  // a loaded machine must not make it stale (not what these tests check)
    configuration.sharedTier = tier
    configuration.liveQueryCoalescing = .milliseconds(5)
    let storage = try LocalStorage(configuration: configuration)
    _ = try await waitUntil { storage.sharedTier.map { $0.phase == .live } ?? false }
    return storage
}

/// What the server's lease key of the record `id` of `T` holds, read with `storage`'s connection.
func serverLeaseOf<T: LocalStorable>(
    _ type: T.Type, id: String, in storage: LocalStorage
) async throws -> SharedTierLease? {
    let tier = try #require(storage.sharedTier)
    let name = try await storage.core.schema(for: T.self).name
    let reply = try await tier.connection.call([Array("GET".utf8), tier.leaseKey(type: name, id: Array(id.utf8))])
    return reply.bytes.flatMap(SharedTierLease.init)
}

/// A value a test's loader notes, for the test to check afterwards.
private final class Noted<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}
