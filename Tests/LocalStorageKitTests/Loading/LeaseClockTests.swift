import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

#if os(Linux)
/// Which clock a lease's deadline goes by: the host's boot clock for a holder on this host, which no step of the
/// wall clock moves, and wall time for another host's (review-105 F6).
@Suite struct LeaseClockTests {
    /// Puts a lease of `holder` on `id` whose deadlines are `wall` and `boot` nanoseconds from now.
    private func putLease(
        on id: String, holder: ProcessIdentity, token: UInt64, wall: Int64, boot: Int64, clock: VirtualClock,
        in storage: LocalStorage
    ) async throws {
        let schema = try await storage.core.schema(for: Product.self)
        let leases = try storage.local.leaseBook()
        let now = clock.leaseMoment()
        let entry = LeaseEntry(
            kind: .lease, owner: holder, token: token, deadline: now.wall + wall, bootDeadline: now.boot + boot)
        let key = LeaseBook.key(type: schema.number, id: Array(id.utf8))
        try storage.core.environment.write { try leases.put(entry, key: key, txn: $0) }
    }

    private func product(_ id: String, _ title: String) -> Product {
        Product(id: id, title: title, category: "books", price: 1, rating: 1)
    }

    private func store() throws -> (LocalStorage, VirtualClock) {
        let clock = VirtualClock()
        var configuration = diskConfiguration(temporaryDirectory())
        configuration.clock = clock
        return (try LocalStorage(configuration: configuration), clock)
    }

    /// Fetches `id` through a loader that counts its loads in `gate` and returns a product titled "loaded here".
    private func fetch(_ id: String, from storage: LocalStorage, counting gate: LoadGate) async throws -> Product? {
        try await storage.fetch(Product.self, id: id, policy: LoadPolicy(loadTimeout: .seconds(60))) { id in
            await gate.pass()
            return Product(id: id, title: "loaded here", category: "books", price: 1, rating: 1)
        }
    }

    // This process holds the leases below, under tokens no load of the store knows: as another process's would.

    /// After the wall clock stepped forward past a live holder's deadline, a caller waits for the holder's load
    /// instead of loading beside it.
    @Test(.timeLimit(.minutes(5))) func aStepForwardDoesNotEndALiveHoldersLease() async throws {
        let (storage, clock) = try store()
        let gate = LoadGate(open: true)
        // The wall deadline passed two minutes ago, 30 s are left on the boot clock.
        try await putLease(
            on: "forward", holder: .current, token: 7, wall: -120_000_000_000, boot: 30_000_000_000, clock: clock,
            in: storage)
        let waiting = Task { try await fetch("forward", from: storage, counting: gate) }
        try await eventually("the caller to wait on the lease, or to load") {
            storage.core.leaseWaits.load(ordering: .relaxed) == 1 || gate.loads > 0
        }
        #expect(gate.loads == 0, "the holder's load still runs")
        // The holder's load stores its record: the caller gets it.
        try await storage.save(product("forward", "the holder's"))
        #expect(try await waiting.value?.title == "the holder's")
        #expect(gate.loads == 0)
    }

    /// After the wall clock stepped back, a deadline passed on the boot clock still ends a lease.
    @Test(.timeLimit(.minutes(5))) func aStepBackDoesNotStretchALease() async throws {
        let (storage, clock) = try store()
        let gate = LoadGate(open: true)
        // Two minutes were left on the wall clock, 30 s on the boot clock, and 31 s have passed.
        try await putLease(
            on: "back", holder: .current, token: 8, wall: 120_000_000_000, boot: 30_000_000_000, clock: clock,
            in: storage)
        clock.advance(by: .seconds(31))
        let taking = Task { try await fetch("back", from: storage, counting: gate) }
        defer { taking.cancel() }
        try await eventually("the caller to take the lease over", timeout: .seconds(60)) { gate.loads == 1 }
        #expect(try await taking.value?.title == "loaded here")
    }

    /// A delete's nil (a marker that ended as it was written) read after a step back of five minutes is still an ended
    /// load's answer, not a remembered nil (review-111 #2: every fetch of the id returned nil without loading).
    @Test func aStepBackDoesNotMakeADeletesNilARememberedOne() async throws {
        let (storage, clock) = try store()
        let gate = LoadGate(open: true)
        let schema = try await storage.core.schema(for: Product.self)
        let leases = try storage.local.leaseBook()
        let now = clock.leaseMoment()
        var marker = LeaseEntry(kind: .lease, owner: .current, token: 9, deadline: 0).ended(as: .absent, now: now)
        marker.deadline = now.wall + 300_000_000_000
        let key = LeaseBook.key(type: schema.number, id: Array("deleted".utf8))
        try storage.core.environment.write { try leases.put(marker, key: key, txn: $0) }
        #expect(try await fetch("deleted", from: storage, counting: gate)?.title == "loaded here")
        #expect(gate.loads == 1)
    }

    /// The sweep and `purgeExpired` go by the same clock: a lease of this host whose wall deadline passed long ago
    /// (a step forward) stays while its boot deadline is ahead, and goes once that is a minute past.
    @Test func endedLeasesOfThisHostAreRemovedByTheBootClock() async throws {
        let (storage, clock) = try store()
        try await putLease(
            on: "held", holder: .current, token: 7, wall: -3_600_000_000_000, boot: 30_000_000_000, clock: clock,
            in: storage)
        let leases = try storage.local.leaseBook()
        func entries() throws -> Int { try storage.core.environment.read { try $0.entryCount(leases.database) } }
        _ = try await storage.purgeExpired()
        #expect(try entries() == 1, "its boot deadline is ahead")
        clock.advance(by: .seconds(91))
        _ = try await storage.purgeExpired()
        #expect(try entries() == 0, "a minute past its boot deadline")
    }

    /// Another host's lease goes by wall time (its boot clock is not this host's), as does an entry an earlier
    /// version wrote without a boot deadline; an entry round-trips its boot deadline, and its first 37 bytes are
    /// what earlier versions read.
    @Test func anotherHostsLeaseAndAnOldEntryGoByWallTime() throws {
        let now = LeaseMoment(wall: 1_000_000_000_000, boot: 5_000_000_000)
        let elsewhere = ProcessIdentity(host: ProcessIdentity.current.host &+ 1, pid: 1, started: 1)
        let stepped = LeaseEntry(
            kind: .lease, owner: elsewhere, token: 1, deadline: now.wall - 1, bootDeadline: now.boot + 30_000_000_000)
        #expect(!stepped.holds(at: now), "another host's boot clock says nothing here")

        let here = ProcessIdentity.current
        let entry = LeaseEntry(
            kind: .lease, owner: here, token: 2, deadline: now.wall - 1, bootDeadline: now.boot + 30_000_000_000)
        #expect(entry.holds(at: now))
        let bytes = entry.bytes
        #expect(bytes.count == LeaseEntry.size + 8)
        let read = try #require(bytes.withUnsafeBytes { LeaseEntry($0) })
        #expect(read == entry)
        let old = try #require(bytes.prefix(LeaseEntry.size).withUnsafeBytes { LeaseEntry($0) })
        #expect(old.bootDeadline == 0)
        #expect(!old.holds(at: now), "without a boot deadline, the wall deadline that passed")
        #expect(old.holds(at: LeaseMoment(wall: now.wall - 2, boot: now.boot)))
    }
}
#endif
