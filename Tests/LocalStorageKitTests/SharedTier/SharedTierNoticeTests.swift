import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// Change notices that reach an instance whose local store is already ahead of them, or holds nothing of the
/// type they change: what the instance's observers hear (review-63 #1–#3).
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierNoticeTests {
    let tier = SharedTestServer.configuration()

    private static func describe(_ change: StorageChange<Product>) -> String {
        switch change {
        case .inserted(let value): "inserted \(value.id) \(value.title)"
        case .updated(let value): "updated \(value.id) \(value.title)"
        case .deleted(let id): "deleted \(id)"
        case .expired(let id): "expired \(id)"
        case .cleared: "cleared"
        }
    }

    /// A read on A that fills its near cache with B's new record before A's applier reaches the notice of B's
    /// save used to hide the save from A: the fill announces nothing (the server held the record), and the
    /// notice was skipped as already applied. A's change stream, live query and `updates(of:id:)` never heard
    /// of it.
    // Time limits: a test that holds the applier would hang instead of failing if something waited for it.
    @Test(.timeLimit(.minutes(10))) func aRemoteSaveReadHereBeforeItsNoticeIsStillAnnounced() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        let tierA = try #require(a.sharedTier)
        try await a.save(Product.sample(1))
        #expect(try await waitUntil { tierA.appliedPosition >= 1 && tierA.phase == .live })
        let changes = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changes.cancel() }
        let rows = Recorder(a.updates(of: Product.self).map { $0.map(\.id).sorted() })
        defer { rows.cancel() }
        let values = Recorder(a.updates(of: Product.self, id: "sku_2").map { $0?.title ?? "nil" })
        defer { values.cancel() }
        #expect(await rows.eventually { $0 == [["sku_1"]] }, "\(rows.values)")
        #expect(await values.eventually { $0 == ["nil"] }, "\(values.values)")

        let gate = SharedTierOwnWriteTests.NoticeGate.holding(tierA)
        defer {
            tierA.beforeNotice.withLock { $0 = nil }
            gate.release(1_000)
        }
        let mark = tierA.appliedPosition
        var fromB = Product.sample(2)
        fromB.title = "from B"
        try await b.save(fromB, expiration: .minutes(5))
        // A plain read on A goes to the server and keeps the record: ahead of the held notice.
        #expect(try await a.fetch(Product.self, id: "sku_2")?.title == "from B")
        #expect(try await waitUntil { try await a.count(Product.self, matching: [], options: .nearCache) == 2 })
        gate.release(1_000)
        #expect(try await waitUntil { tierA.appliedPosition > mark })
        #expect(
            await changes.eventually(within: .seconds(120)) { $0 == ["inserted sku_2 from B"] }, "\(changes.values)")
        #expect(await rows.eventually(within: .seconds(120)) { $0.last == ["sku_1", "sku_2"] }, "\(rows.values)")
        #expect(await values.eventually(within: .seconds(120)) { $0 == ["nil", "from B"] }, "\(values.values)")

        // Later writes apply as usual: an update, then a delete.
        fromB.title = "again"
        try await b.save(fromB)
        // Heard before the delete: an update and a delete applied in one commit would be read as a delete only.
        #expect(
            await changes.eventually(within: .seconds(120)) { $0.count == 2 }
                && changes.values.last == "updated sku_2 again",
            "\(changes.values)")
        try await b.delete(Product.self, id: "sku_2")
        let expected = ["inserted sku_2 from B", "updated sku_2 again", "deleted sku_2"]
        #expect(await changes.eventually(within: .seconds(120)) { $0 == expected }, "\(changes.values)")
        #expect(await values.eventually(within: .seconds(120)) { $0.last == "nil" }, "\(values.values)")
    }

    /// The same announcement when the applier's commit runs twice: a peer in its batch throws, the batch is
    /// aborted and replayed without it. The first attempt skipped the notice, announced it and forgot the copy
    /// ahead; that outlived the aborted attempt, so the replay found nothing to announce (the fill's bytes were
    /// already there) and A's observers never heard of the save (review-64 #2).
    @Test(.timeLimit(.minutes(10))) func aNoticeAnnouncedInAnAttemptThatAbortedIsAnnouncedWhenItRunsAgain()
        async throws
    {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        let tierA = try #require(a.sharedTier)
        try await a.save(Product.sample(1))
        #expect(try await waitUntil { tierA.appliedPosition >= 1 && tierA.phase == .live })
        let changes = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changes.cancel() }
        let gate = SharedTierOwnWriteTests.NoticeGate.holding(tierA)
        defer {
            tierA.beforeNotice.withLock { $0 = nil }
            gate.release(1_000)
        }
        let mark = tierA.appliedPosition
        var fromB = Product.sample(2)
        fromB.title = "from B"
        try await b.save(fromB)
        #expect(try await a.fetch(Product.self, id: "sku_2")?.title == "from B")
        #expect(try await waitUntil { try await a.count(Product.self, matching: [], options: .nearCache) == 2 })

        // The applier's commit and a request that throws, queued behind a held writer: one batch.
        let hold = try await WriterHold(a)
        let queued = a.core.writer.queuedCount
        gate.release(1_000)
        try await waitUntil("the notice's commit is queued") {
            tierA.state.withLock { $0.receivedSeq ?? 0 } > mark && a.core.writer.queuedCount >= queued + 1
        }
        let peer = Task { try await a.core.writer.perform { _ in throw ShopError.soldOut(sku: "peer") } }
        try await waitUntil("the peer is queued") { a.core.writer.queuedCount >= queued + 2 }
        try await hold.release()
        await #expect(throws: (any Error).self) { try await peer.value }
        #expect(try await waitUntil { tierA.appliedPosition > mark })
        #expect(
            await changes.eventually(within: .seconds(120)) { $0 == ["inserted sku_2 from B"] }, "\(changes.values)")
    }

    /// A notice a fill got ahead of, reaching an instance whose near cache evicted the fill's copy meanwhile,
    /// applies as to a record the instance never held: the record comes back and is announced with its value.
    /// It was announced for a copy that was gone: change streams, which read the value, dropped the insert, and
    /// the eviction order took a use of a record the store did not hold (review-64 #5).
    @Test(.timeLimit(.minutes(10))) func aNoticeAFillGotAheadOfAppliesWhenTheFillsCopyWasEvicted() async throws {
        let b = try await sharedStore(tier)
        var configuration = LocalStorageConfiguration.inMemory
        var tier = tier
        tier.maxStaleness = .seconds(30)  // Not about staleness: a loaded machine may delay a heartbeat past 1 s.
        configuration.sharedTier = tier
        configuration.limits = StorageLimits(maxRecords: 2)
        configuration.evictionPolicy = .leastRecentlyUsed
        let a = try LocalStorage(configuration: configuration)
        let tierA = try #require(a.sharedTier)
        #expect(try await waitUntil { tierA.phase == .live })
        _ = try await a.count(Product.self, matching: [], options: .nearCache)
        let changes = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changes.cancel() }
        let gate = SharedTierOwnWriteTests.NoticeGate.holding(tierA)
        defer {
            tierA.beforeNotice.withLock { $0 = nil }
            gate.release(1_000)
        }
        let mark = tierA.appliedPosition
        for number in 1...3 { try await b.save(Product.sample(number)) }
        // A reads all three before their notices: the third fill evicts the first (at most two records).
        for number in 1...3 {
            #expect(try await a.fetch(Product.self, id: "sku_\(number)") == Product.sample(number))
            try await a.core.writer.perform { _ in }
        }
        #expect(try await a.count(Product.self, matching: [], options: .nearCache) == 2)
        // sku_1's notice alone: applied in the same commit as the others, its record can be the one that commit
        // evicts (the least recently used of three), and an insert of a record gone by then is dropped.
        gate.release(1)
        #expect(try await waitUntil { tierA.appliedPosition >= mark + 1 })
        #expect(
            await changes.eventually(within: .seconds(120)) {
                $0.contains("inserted sku_1 \(Product.sample(1).title)")
            },
            "\(changes.values)")
        gate.release(1_000)
        #expect(try await waitUntil { tierA.appliedPosition >= mark + 3 })
        #expect(try await a.statistics().records <= 2)
    }

    /// An own save over a copy a fill wrote, before the notices the fill got ahead of: A's observers never heard
    /// of the record, so the save is an insert for them (it was announced as an update), and the notices stay
    /// silent (review-64 #4).
    @Test(.timeLimit(.minutes(10))) func anOwnSaveOverAFillTheObserversNeverHeardOfIsAnInsert() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        let tierA = try #require(a.sharedTier)
        try await a.save(Product.sample(1))
        #expect(try await waitUntil { tierA.appliedPosition >= 1 && tierA.phase == .live })
        let changes = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changes.cancel() }
        let gate = SharedTierOwnWriteTests.NoticeGate.holding(tierA)
        defer {
            tierA.beforeNotice.withLock { $0 = nil }
            gate.release(1_000)
        }
        let mark = tierA.appliedPosition
        var product = Product.sample(2)
        product.title = "from B"
        try await b.save(product)
        #expect(try await a.fetch(Product.self, id: "sku_2")?.title == "from B")
        #expect(try await waitUntil { try await a.count(Product.self, matching: [], options: .nearCache) == 2 })
        product.title = "from A"
        try await a.save(product)
        gate.release(1_000)
        #expect(try await waitUntil { tierA.appliedPosition >= mark + 2 })
        #expect(await changes.eventually(within: .seconds(120)) { !$0.isEmpty }, "\(changes.values)")
        // A last write of A's own, heard after everything before it.
        try await a.delete(Product.self, id: "sku_1")
        #expect(
            await changes.eventually(within: .seconds(120)) { $0.last == "deleted sku_1" }, "\(changes.values)")
        #expect(changes.values == ["inserted sku_2 from A", "deleted sku_1"])
    }

    /// `setExpiration` on a store with a shared tier is no update, as on a store without one: the change
    /// streams of the instance that made it and of another stay silent (each heard `.updated`), and the new
    /// expiry reaches the other instance (review-63 #4). Like any write of the id it voids a load lease on the
    /// server, as it does this store's (trial86 #3: a refresh's reload stored its own expiry over it).
    @Test func aNewTimeToLiveIsNoUpdateOnAnyInstanceAndVoidsTheLease() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        let tierA = try #require(a.sharedTier)
        let tierB = try #require(b.sharedTier)
        try await a.save(Product.sample(1))
        // B has taken the save (sequence 1 of this test's namespace): its notice is not announced after the recorders
        // start. (A's own applied position can lag its own writes: it is no mark for B.)
        #expect(try await waitUntil { tierB.appliedPosition >= 1 })
        #expect(try await b.fetch(Product.self, id: "sku_1") == Product.sample(1))
        let changesA = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changesA.cancel() }
        let changesB = Recorder(b.changes(of: Product.self).map(Self.describe))
        defer { changesB.cancel() }
        let lease = tierA.layout.lease(type: SharedTierLayout.escape(Product.storageName), id: Array("sku_1".utf8))
        _ = try await tierA.connection.call([Array("SET".utf8), lease, SharedTierLease(kind: .lease, token: 9).bytes])

        try await a.setExpiration(Product.self, id: "sku_1", .minutes(5))
        #expect(try await waitUntil { tierB.appliedPosition >= 2 })
        #expect(try await waitUntil { try await b.metadata(Product.self, id: "sku_1")?.expiresAt != nil })
        try await a.save(Product.sample(2))
        let inserted = "inserted sku_2 \(Product.sample(2).title)"
        #expect(await changesA.eventually { !$0.isEmpty }, "\(changesA.values)")
        #expect(await changesB.eventually { !$0.isEmpty }, "\(changesB.values)")
        #expect(changesA.values == [inserted])
        #expect(changesB.values == [inserted])
        let held = try await tierA.connection.call([Array("GET".utf8), lease])
        #expect(
            held.bytes.flatMap(SharedTierLease.init) == SharedTierLease(kind: .absent, token: 9, rememberUntil: .min))
    }

    /// A notice older than this instance's own `deleteAll`, applied after the clear ran here, is skipped: it
    /// brought back a record the clear had removed, served until the clear's own notice cleared it again
    /// (review-65 #3). The clear's notice does not clear again either.
    @Test(.timeLimit(.minutes(10))) func aNoticeOlderThanAnOwnClearDoesNotBringARecordBack() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        let tierA = try #require(a.sharedTier)
        try await a.save(Product.sample(1))
        #expect(try await waitUntil { tierA.appliedPosition >= 1 && tierA.phase == .live })
        let changes = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changes.cancel() }
        let gate = SharedTierOwnWriteTests.NoticeGate.holding(tierA)
        defer {
            tierA.beforeNotice.withLock { $0 = nil }
            gate.release(1_000)
        }
        let mark = tierA.appliedPosition
        try await b.save(Product.sample(2))
        try await a.deleteAll(Product.self)
        #expect(try await a.count(Product.self, matching: [], options: .nearCache) == 0)
        // B's save (older than the clear), then the clear's own notice.
        gate.release(1)
        #expect(try await waitUntil { tierA.appliedPosition >= mark + 1 })
        #expect(try await a.count(Product.self, matching: [], options: .nearCache) == 0)
        gate.release(1_000)
        #expect(try await waitUntil { tierA.appliedPosition >= mark + 2 })
        #expect(try await a.count(Product.self, matching: [], options: .nearCache) == 0)
        try await a.save(Product.sample(3))
        let inserted = "inserted sku_3 \(Product.sample(3).title)"
        #expect(await changes.eventually(within: .seconds(120)) { $0.last == inserted }, "\(changes.values)")
        #expect(changes.values == ["cleared", inserted])
    }

    /// A new time to live that a fill got ahead of is no update either: B saves, then sets a new expiry; A reads the
    /// record before both notices, which are then announced from what A skipped: an insert, and a touch (it was an
    /// update; review-65 #5).
    @Test(.timeLimit(.minutes(10))) func aNewTimeToLiveAFillGotAheadOfIsNoUpdate() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        let tierA = try #require(a.sharedTier)
        try await a.save(Product.sample(1))
        #expect(try await waitUntil { tierA.appliedPosition >= 1 && tierA.phase == .live })
        let changes = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changes.cancel() }
        let gate = SharedTierOwnWriteTests.NoticeGate.holding(tierA)
        defer {
            tierA.beforeNotice.withLock { $0 = nil }
            gate.release(1_000)
        }
        let mark = tierA.appliedPosition
        try await b.save(Product.sample(2))
        try await b.setExpiration(Product.self, id: "sku_2", .minutes(30))
        #expect(try await a.fetch(Product.self, id: "sku_2") == Product.sample(2))
        #expect(try await waitUntil { try await a.count(Product.self, matching: [], options: .nearCache) == 2 })
        gate.release(1_000)
        #expect(try await waitUntil { tierA.appliedPosition >= mark + 2 })
        try await a.save(Product.sample(3))
        let last = "inserted sku_3 \(Product.sample(3).title)"
        #expect(await changes.eventually(within: .seconds(120)) { $0.last == last }, "\(changes.values)")
        #expect(changes.values == ["inserted sku_2 \(Product.sample(2).title)", last])
    }

    /// Two saves of one value with different expirations at one instant (a frozen test clock) are two saves: the
    /// second is an update, not a new time to live, as on a store without a shared tier. A save stamps a later
    /// update time than the instance's last write even when the clock has not moved (review-65 #4).
    @Test func twoSavesAtOneInstantAreTwoSaves() async throws {
        let a = try await sharedStore(tier, clock: VirtualClock())
        let changes = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changes.cancel() }
        try await a.save(Product.sample(1), expiration: .hours(1))
        try await a.save(Product.sample(1), expiration: .hours(2))
        let title = Product.sample(1).title
        #expect(await changes.eventually(within: .seconds(120)) { $0.count == 2 }, "\(changes.values)")
        #expect(changes.values == ["inserted sku_1 \(title)", "updated sku_1 \(title)"])
    }

    /// Notices that a fill got ahead of are announced in their order, as applying them would have: B's save, its
    /// delete and its save again all come before A's read, and A's observers hear an insert, a delete and an
    /// insert.
    @Test(.timeLimit(.minutes(10))) func noticesAFillGotAheadOfAreAnnouncedInOrder() async throws {
        let a = try await sharedStore(tier)
        let b = try await sharedStore(tier)
        let tierA = try #require(a.sharedTier)
        try await a.save(Product.sample(1))
        #expect(try await waitUntil { tierA.appliedPosition >= 1 && tierA.phase == .live })
        let changes = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changes.cancel() }
        let gate = SharedTierOwnWriteTests.NoticeGate.holding(tierA)
        defer {
            tierA.beforeNotice.withLock { $0 = nil }
            gate.release(1_000)
        }
        let mark = tierA.appliedPosition
        var product = Product.sample(2)
        product.title = "first"
        try await b.save(product)
        try await b.delete(Product.self, id: product.id)
        product.title = "second"
        try await b.save(product)
        #expect(try await a.fetch(Product.self, id: product.id)?.title == "second")
        #expect(try await waitUntil { try await a.count(Product.self, matching: [], options: .nearCache) == 2 })
        gate.release(1_000)
        #expect(try await waitUntil { tierA.appliedPosition >= mark + 3 })
        // Each announcement reads the record as the store holds it now (the fill's copy).
        let expected = ["inserted sku_2 second", "deleted sku_2", "inserted sku_2 second"]
        #expect(await changes.eventually(within: .seconds(120)) { $0 == expected }, "\(changes.values)")
        #expect(try await a.fetch(Product.self, id: product.id)?.title == "second")
    }

    /// B's `deleteAll` on an instance that holds none of the type's records was not applied at all: A's live
    /// query (run on the server) kept the cleared rows, its change stream heard nothing, and its remembered nil
    /// outlived the clear that ended B's and the server's.
    @Test func aRemoteDeleteAllReachesAnInstanceHoldingNoneOfTheRecords() async throws {
        let b = try await sharedStore(tier)
        try await b.save(contentsOf: [Product.sample(1), Product.sample(2)])
        let a = try await sharedStore(tier)
        let policy = LoadPolicy(absentFor: .hours(1))
        #expect(try await a.fetch(Product.self, id: "sku_9", policy: policy) { _ in nil } == nil)
        #expect(try await a.count(Product.self, matching: [], options: .nearCache) == 0)
        let changes = Recorder(a.changes(of: Product.self).map(Self.describe))
        defer { changes.cancel() }
        let rows = Recorder(a.updates(of: Product.self).map { $0.map(\.id).sorted() })
        defer { rows.cancel() }
        #expect(await rows.eventually { $0 == [["sku_1", "sku_2"]] }, "\(rows.values)")
        try await b.deleteAll(Product.self)
        #expect(await changes.eventually(within: .seconds(120)) { $0 == ["cleared"] }, "\(changes.values)")
        #expect(await rows.eventually(within: .seconds(120)) { $0.last == [] }, "\(rows.values)")
        let loads = Mutex(0)
        let loaded = try await a.fetch(Product.self, id: "sku_9", policy: policy) { _ in
            loads.withLock { $0 += 1 }
            return Product.sample(9)
        }
        #expect(loaded == Product.sample(9))
        #expect(loads.withLock { $0 } == 1)
    }
}
