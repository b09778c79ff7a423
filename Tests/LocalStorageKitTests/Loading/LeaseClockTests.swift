import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#endif

/// Which clock a lease's deadline goes by: the host's boot clock for a holder on this host, which no step of the
/// wall clock moves, and wall time for another host's (review-105 F6).
@Suite struct LeaseClockTests {
    /// A live process of this host other than this one (the test runner's parent), as a lease's holder.
    private func liveNeighbour() throws -> ProcessIdentity {
        let parent = getppid()
        let started = try #require(ProcessIdentity.startTime(of: parent))
        return ProcessIdentity(host: ProcessIdentity.current.host, pid: parent, started: started)
    }

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

    /// After the wall clock stepped forward past a live holder's deadline, a caller waits for the holder's load
    /// instead of loading beside it; after it stepped back, a dead line on the boot clock still ends the lease.
    @Test(.timeLimit(.minutes(5))) func aWallClockStepNeitherEndsNorStretchesALeaseOfThisHost() async throws {
        let clock = VirtualClock()
        var configuration = diskConfiguration(temporaryDirectory())
        configuration.clock = clock
        let storage = try LocalStorage(configuration: configuration)
        let holder = try liveNeighbour()
        let gate = LoadGate(open: true)
        let policy = LoadPolicy(loadTimeout: .seconds(60))
        @Sendable func load(_ id: String) async -> Product? {
            await gate.pass()
            return Product(id: id, title: "loaded here", category: "books", price: 1, rating: 1)
        }

        // A step forward: the wall deadline passed two minutes ago, 30 s are left on the boot clock.
        try await putLease(
            on: "forward", holder: holder, token: 7, wall: -120_000_000_000, boot: 30_000_000_000, clock: clock,
            in: storage)
        let waiting = Task { try await storage.fetch(Product.self, id: "forward", policy: policy, load: load) }
        try await eventually("the caller to wait on the lease, or to load") {
            storage.core.leaseWaits.load(ordering: .relaxed) == 1 || gate.loads > 0
        }
        #expect(gate.loads == 0, "the holder's load still runs")
        // The holder's load stores its record: the caller gets it.
        try await storage.save(product("forward", "the holder's"))
        #expect(try await waiting.value?.title == "the holder's")
        #expect(gate.loads == 0)

        // A step back: two minutes are left on the wall clock, 30 s on the boot clock.
        try await putLease(
            on: "back", holder: holder, token: 8, wall: 120_000_000_000, boot: 30_000_000_000, clock: clock,
            in: storage)
        let taking = Task { try await storage.fetch(Product.self, id: "back", policy: policy, load: load) }
        try await eventually("the caller to wait on the lease") {
            storage.core.leaseWaits.load(ordering: .relaxed) == 2 || gate.loads > 0
        }
        clock.advance(by: .seconds(31))
        try await eventually("the caller to take the lease over", timeout: .seconds(60)) { gate.loads == 1 }
        #expect(try await taking.value?.title == "loaded here")
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

        let here = try liveNeighbour()
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
