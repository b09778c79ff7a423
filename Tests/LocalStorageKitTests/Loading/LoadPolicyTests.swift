import Foundation
import Synchronization
import Testing

@_spi(Maintenance) @_spi(Testing) @testable import LocalStorageKit

@Suite struct LoadPolicyTests {
    private func store(_ clock: VirtualClock, directory: URL = temporaryDirectory()) throws -> LocalStorage {
        var configuration = diskConfiguration(directory)
        configuration.clock = clock
        return try LocalStorage(configuration: configuration)
    }

    @Test func defaultsAreTheContractsOnes() {
        let policy = LoadPolicy()
        #expect(policy.expiration == .never)
        #expect(policy.refreshAfter == nil)
        #expect(policy.absentFor == nil)
        #expect(policy.loadTimeout == .seconds(30))
        let literal = LoadPolicy(
            expiration: .hours(2), refreshAfter: .minutes(10), absentFor: .seconds(30), loadTimeout: .seconds(30))
        #expect(literal.refreshAfter == .seconds(600))
    }

    @Test func refreshAfterServesTheOldValueAtOnceAndReloadsOnceBehind() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let old = Product(id: "sku_1", title: "old", category: "books", price: 1, rating: 1)
        try await storage.save(old)
        clock.advance(by: .minutes(11))
        let gate = LoadGate()
        let policy = LoadPolicy(refreshAfter: .minutes(10))
        let changes = storage.changes(of: Product.self)
        let served = try await withThrowingTaskGroup(of: Product?.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    try await storage.fetch(Product.self, id: "sku_1", policy: policy) { id in
                        await gate.pass()
                        return Product(id: id, title: "new", category: "books", price: 2, rating: 2)
                    }
                }
            }
            var served: [Product?] = []
            for try await value in group { served.append(value) }
            return served
        }
        // Every caller got the old record at once, while the one reload waits at the gate.
        #expect(served.allSatisfy { $0 == old })
        try await gate.waitForLoad()
        gate.open()
        for await change in changes {
            if case .updated(let product) = change {
                #expect(product.title == "new")
                break
            }
        }
        #expect(gate.loads == 1)
        #expect(try await storage.fetch(Product.self, id: "sku_1")?.title == "new")
    }

    @Test func aFailedRefreshKeepsTheRecord() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let old = Product.sample(3)
        try await storage.save(old)
        clock.advance(by: .seconds(61))
        let policy = LoadPolicy(refreshAfter: .seconds(60))
        let failed = LoadGate(open: true)
        #expect(
            try await storage.fetch(Product.self, id: old.id, policy: policy) { _ in
                await failed.pass()
                throw CatalogError(code: 500)
            } == old)
        try await eventually("the refresh to end") { failed.loads == 1 && storage.core.loads.count == 0 }
        #expect(try await storage.fetch(Product.self, id: old.id) == old)
    }

    /// A `setExpiration` committed while a background refresh runs is a write of the id, so it wins over the
    /// reload as a save would: the reload's value is not stored over it (trial86 #3: the reload's expiry replaced
    /// the one the app had just set, an hour for two seconds).
    @Test func aNewExpiryDuringARefreshWinsOverTheReload() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let old = Product.sample(5)
        try await storage.save(old)
        clock.advance(by: .seconds(61))
        let gate = LoadGate()
        let policy = LoadPolicy(expiration: .hours(1), refreshAfter: .seconds(60))
        #expect(
            try await storage.fetch(Product.self, id: old.id, policy: policy) { id in
                await gate.pass()
                return Product(id: id, title: "reloaded", category: "books", price: 2, rating: 2)
            } == old)
        try await gate.waitForLoad()
        try await storage.setExpiration(Product.self, id: old.id, .seconds(30))
        let expiresAt = try #require(try await storage.metadata(Product.self, id: old.id)?.expiresAt)
        gate.open()
        try await eventually("the refresh to end") { storage.core.loads.count == 0 }
        #expect(try await storage.fetch(Product.self, id: old.id) == old)
        #expect(try await storage.metadata(Product.self, id: old.id)?.expiresAt == expiresAt)
    }

    /// A write of the id that commits after a fetch served the record stale and before the background refresh takes
    /// its lease wins over the refresh, as one committed while it loads does (trial90 #1: a delete or `deleteAll` was
    /// undone by the refresh, which took its lease on the record's absence, and a new expiry was replaced, the update
    /// time being unchanged). A caller that joins the refresh's flight then loads for itself.
    @Test(arguments: ["delete", "deleteAll", "setExpiration"])
    func aWriteBeforeARefreshTakesItsLeaseWins(write: String) async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let old = Product.sample(5)
        try await storage.save(old, expiration: .hours(1))
        clock.advance(by: .seconds(61))
        let loads = Atomic(0)
        let policy = LoadPolicy(expiration: .hours(2), refreshAfter: .seconds(60))
        let hold = try await WriterHold(storage)
        let writing = Task {
            switch write {
            case "delete": try await storage.delete(Product.self, id: old.id)
            case "deleteAll": try await storage.deleteAll(Product.self)
            default: try await storage.setExpiration(Product.self, id: old.id, .seconds(30))
            }
        }
        try await eventually("the write to queue") { storage.core.writer.queuedCount >= 1 }
        let served = try await storage.fetch(Product.self, id: old.id, policy: policy) { id in
            loads.add(1, ordering: .relaxed)
            return Product(id: id, title: "reloaded", category: "books", price: 2, rating: 2)
        }
        #expect(served == old)
        try await eventually("the refresh's lease to queue") { storage.core.writer.queuedCount >= 2 }
        try await hold.release()
        try await writing.value
        try await eventually("the refresh to end") { storage.core.loads.count == 0 }
        #expect(loads.load(ordering: .relaxed) == 0)
        if write == "setExpiration" {
            #expect(try await storage.fetch(Product.self, id: old.id) == old)
            let now = Date(timeIntervalSince1970: Double(clock.wallNanoseconds()) / 1e9)
            let expiresAt = try #require(try await storage.metadata(Product.self, id: old.id)?.expiresAt)
            #expect(abs(expiresAt.timeIntervalSince(now) - 30) < 1, "\(expiresAt) against \(now)")
        } else {
            #expect(try await storage.fetch(Product.self, id: old.id) == nil)
            // A caller after the write loads.
            let loaded = try await storage.fetch(Product.self, id: old.id, policy: policy) { id in
                Product(id: id, title: "loaded", category: "books", price: 3, rating: 3)
            }
            #expect(loaded?.title == "loaded")
        }
    }

    /// Puts another host's entry (token 7) for `id`'s load, until `deadline` (ns since 1970): a lease of its load
    /// under way, or the ended marker of the nil it found.
    /// Holds the `number`th look of the flights of `storage` (``LoadFlights/Step/beforeLook``) at the gate it returns,
    /// until the test opens it.
    private func holdingLook(_ number: Int, of storage: LocalStorage) -> LoadGate {
        let gate = LoadGate()
        let looks = Atomic(0)
        storage.core.loads.stepsForTests.withLock {
            $0 = { step in
                guard step == .beforeLook, looks.add(1, ordering: .sequentiallyConsistent).newValue == number else {
                    return
                }
                await gate.pass()
            }
        }
        return gate
    }

    /// Fetches the product "held" through `gate`, loading one titled "loaded here" (30 s `loadTimeout`).
    private func fetchHeld(from storage: LocalStorage, through gate: LoadGate) async throws -> Product? {
        try await storage.fetch(Product.self, id: "held", policy: LoadPolicy(loadTimeout: .seconds(30))) { id in
            await gate.pass()
            return Product(id: id, title: "loaded here", category: "books", price: 1.5, rating: 2)
        }
    }

    @discardableResult
    private func putForeignLease(
        _ kind: LeaseEntry.Kind, of id: String, until deadline: Int64, in storage: LocalStorage
    ) async throws -> (LeaseBook, [UInt8]) {
        let schema = try await storage.core.schema(for: Product.self)
        let leases = try storage.local.leaseBook()
        let elsewhere = ProcessIdentity(host: ProcessIdentity.current.host &+ 1, pid: 1, started: 0)
        let entry = LeaseEntry(kind: kind, owner: elsewhere, token: 7, deadline: deadline)
        let key = LeaseBook.key(type: schema.number, id: Array(id.utf8))
        try storage.core.environment.write { try leases.put(entry, key: key, txn: $0) }
        return (leases, key)
    }

    /// A caller that joined a background refresh which then found the record gone waits no longer than its own
    /// `loadTimeout` in all: it stops waiting at the deadline its call began with (review-91 R2: it had a whole new
    /// `loadTimeout` from the moment the refresh ended).
    @Test(.timeLimit(.minutes(5))) func aCallerAfterAnOvertakenRefreshKeepsItsDeadline() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let old = Product.sample(6)
        try await storage.save(old, expiration: .seconds(70))
        clock.advance(by: .seconds(61))
        // Another host's load of the id holds a lease for 30 s more: the refresh waits for it, and nothing but
        // the clock ends that wait (an expiry wakes nothing).
        try await putForeignLease(.lease, of: old.id, until: clock.wallNanoseconds() + 30_000_000_000, in: storage)
        let gate = LoadGate()
        @Sendable func load(_ id: String) async -> Product? {
            await gate.pass()
            return Product(id: id, title: "loaded", category: "books", price: 2, rating: 2)
        }
        let policy = LoadPolicy(refreshAfter: .seconds(60), loadTimeout: .seconds(40))
        #expect(try await storage.fetch(Product.self, id: old.id, policy: policy, load: load) == old)
        try await eventually("the refresh to wait on the lease") {
            storage.core.leaseWaits.load(ordering: .relaxed) == 1
        }
        clock.advance(by: .seconds(14))  // 75 s: the record has expired; the caller's deadline is at 115 s.
        let finished = Atomic(false)
        let caller = Task {
            defer { finished.store(true, ordering: .sequentiallyConsistent) }
            return try await storage.fetch(Product.self, id: old.id, policy: policy, load: load)
        }
        try await eventually("the caller to join the refresh") { storage.core.loads.waiterCount == 1 }
        clock.advance(by: .seconds(16))  // 91 s: the lease ends, the refresh finds nothing to refresh.
        try await gate.waitForLoad()  // The caller's own flight loads.
        clock.advance(by: .seconds(25))  // 116 s: past the caller's deadline, 25 s into its second flight.
        try await eventually("the caller to time out", timeout: .seconds(60)) {
            finished.load(ordering: .sequentiallyConsistent)
        }
        await #expect(throws: LocalStorageError.loadTimedOut(id: old.id)) { try await caller.value }
        #expect(gate.loads == 1)  // The refresh did not load.
        // The caller's flight goes on for a whole `loadTimeout` from its start (review-92 F3: it was given up with the
        // caller, and callers that had joined it loaded again): its value is stored.
        gate.open()
        try await eventually("the loads to end") { storage.core.loads.count == 0 }
        #expect(try await storage.fetch(Product.self, id: old.id)?.title == "loaded")
    }

    /// A refresh that waited on another process's load of the id, which found nothing, gives its callers that nil:
    /// a caller that joined it (the record having expired meanwhile) does not load once more (review-91 R3).
    @Test(.timeLimit(.minutes(5))) func aRefreshThatWaitedOnALoadThatFoundNothingAnswersNil() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let old = Product.sample(7)
        try await storage.save(old, expiration: .seconds(70))
        clock.advance(by: .seconds(61))
        try await putForeignLease(.lease, of: old.id, until: clock.wallNanoseconds() + 30_000_000_000, in: storage)
        let loads = Atomic(0)
        @Sendable func load(_ id: String) -> Product? {
            loads.add(1, ordering: .relaxed)
            return Product(id: id, title: "loaded", category: "books", price: 2, rating: 2)
        }
        let policy = LoadPolicy(refreshAfter: .seconds(60), loadTimeout: .seconds(40))
        #expect(try await storage.fetch(Product.self, id: old.id, policy: policy, load: load) == old)
        try await eventually("the refresh to wait on the lease") {
            storage.core.leaseWaits.load(ordering: .relaxed) == 1
        }
        clock.advance(by: .seconds(14))  // The record has expired.
        let caller = Task { try await storage.fetch(Product.self, id: old.id, policy: policy, load: load) }
        try await eventually("the caller to join the refresh") { storage.core.loads.waiterCount == 1 }
        // The other process's load found nothing: its lease becomes an ended marker of the nil.
        try await putForeignLease(.absent, of: old.id, until: clock.wallNanoseconds(), in: storage)
        clock.advance(by: .seconds(16))  // The refresh's wait for the lease ends.
        #expect(try await caller.value == nil)
        #expect(loads.load(ordering: .relaxed) == 0)
    }

    /// A clear (or delete) that commits in the same group commit just before a load takes its lease came before
    /// the load: it voided the new lease at the end of the commit, so the loaded value was not stored and the
    /// caller got nil.
    @Test(.timeLimit(.minutes(5))) func aClearJustBeforeTheLeaseInOneCommitDoesNotVoidIt() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        try await storage.save(Product.sample(1))
        let hold = try await WriterHold(storage)
        let clearing = Task { try await storage.deleteAll(Product.self) }
        try await eventually("the clear to queue") { storage.core.writer.queuedCount >= 1 }
        let loading = Task {
            try await storage.fetch(Product.self, id: "sku_2", expiration: .hours(1)) { _ in Product.sample(2) }
        }
        try await eventually("the lease to queue") { storage.core.writer.queuedCount >= 2 }
        try await hold.release()
        try await clearing.value
        #expect(try await loading.value == Product.sample(2))
        #expect(try await storage.fetch(Product.self, id: "sku_2") == Product.sample(2))
        #expect(storage.core.unstoredLoads.load(ordering: .relaxed) == 0)
    }

    /// A background refresh whose load finds nothing deletes the record and, with `absentFor`, remembers the nil
    /// like any other load: the next call within the window returns nil without loading (it loaded again).
    @Test func aRefreshThatFindsNothingRemembersTheNil() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let old = Product.sample(4)
        try await storage.save(old)
        clock.advance(by: .seconds(2))
        let policy = LoadPolicy(refreshAfter: .seconds(1), absentFor: .minutes(5))
        let loads = LoadGate(open: true)
        @Sendable func load(_ id: String) async -> Product? {
            await loads.pass()
            return nil
        }
        #expect(try await storage.fetch(Product.self, id: old.id, policy: policy, load: load) == old)
        try await eventually("the refresh to end") { loads.loads == 1 && storage.core.loads.count == 0 }
        #expect(try await storage.fetch(Product.self, id: old.id) == nil)
        #expect(try await storage.fetch(Product.self, id: old.id, policy: policy, load: load) == nil)
        #expect(loads.loads == 1)
        clock.advance(by: .minutes(6))
        #expect(try await storage.fetch(Product.self, id: old.id, policy: policy, load: load) == nil)
        #expect(loads.loads == 2)
        // Without `absentFor` nothing is remembered: the record is deleted and the next call loads.
        try await storage.save(old)
        clock.advance(by: .seconds(2))
        let forgetful = LoadPolicy(refreshAfter: .seconds(1))
        #expect(try await storage.fetch(Product.self, id: old.id, policy: forgetful, load: load) == old)
        try await eventually("the refresh to end") { loads.loads == 3 && storage.core.loads.count == 0 }
        #expect(try await storage.fetch(Product.self, id: old.id, policy: forgetful, load: load) == nil)
        #expect(loads.loads == 4)
    }

    /// A duration past a century (`.seconds(Int64.max)` meant as "no timeout") used to wrap a deadline: the
    /// load's timer ended the process (Int64.max seconds), or the lease counted as void from the start and the
    /// loaded record was dropped (1e10 s), and an `absentFor` that long remembered nothing. It counts as a
    /// century now, on the system's clock as on a virtual one.
    @Test(arguments: [false, true]) func durationsPastACenturyCountAsACentury(virtualClock: Bool) async throws {
        var configuration = diskConfiguration(temporaryDirectory())
        if virtualClock { configuration.clock = VirtualClock() }
        let storage = try LocalStorage(configuration: configuration)
        for (number, timeout) in [Duration.seconds(Int64.max), .seconds(1e10), .seconds(1e11)].enumerated() {
            let id = "long-\(number)"
            let loaded = try await storage.fetch(Product.self, id: id, policy: LoadPolicy(loadTimeout: timeout)) { id in
                Product(id: id, title: "loaded", category: "books", price: 1, rating: 1)
            }
            #expect(loaded?.id == id)
            #expect(try await storage.fetch(Product.self, id: id)?.title == "loaded")
        }
        let gate = LoadGate(open: true)
        for absentFor in [Duration.seconds(1e10), .seconds(Int64.max)] {
            let policy = LoadPolicy(absentFor: absentFor, loadTimeout: .seconds(Int64.max))
            for _ in 0..<3 {
                let value = try await storage.fetch(Product.self, id: "gone-\(absentFor)", policy: policy) { _ in
                    await gate.pass()
                    return nil
                }
                #expect(value == nil)
            }
        }
        #expect(gate.loads == 2)
        let cut = try LoadPolicy(
            refreshAfter: .seconds(Int64.max), absentFor: .seconds(1e12), loadTimeout: .seconds(1e15)
        )
        .validated()
        let century = Duration.seconds(100 * 365 * 86_400)
        #expect(cut.refreshAfter == century)
        #expect(cut.absentFor == century)
        #expect(cut.loadTimeout == century)
    }

    /// `.minutes(_:)` and `.hours(_:)` of an infinity (or any number of seconds past what a `Duration` holds)
    /// stopped the process in `Duration.seconds(_:)`; they are the longest duration now, which a policy counts
    /// as a century, and NaN is refused with the other invalid durations.
    @Test func minutesAndHoursPastWhatADurationHoldsAreTheLongest() throws {
        for duration in [Duration.hours(.infinity), .minutes(1e300), .hours(3e15)] {
            #expect(duration == .seconds(Int64.max))
            #expect(try LoadPolicy(refreshAfter: duration).validated().refreshAfter == .seconds(100 * 365 * 86_400))
        }
        #expect(Duration.minutes(-.infinity) == .seconds(Int64.min))
        #expect(Duration.hours(1.5) == .seconds(5_400))
        let nan = #expect(throws: LocalStorageError.self) { try LoadPolicy(refreshAfter: .minutes(.nan)).validated() }
        // It said "got -9223372036854775808.0 seconds".
        #expect("\(String(describing: nan))".contains("not a number"))
    }

    @Test func absentForRemembersANilThatNoOtherReadSees() async throws {
        let clock = VirtualClock()
        let directory = temporaryDirectory()
        let storage = try store(clock, directory: directory)
        let gate = LoadGate(open: true)
        let policy = LoadPolicy(absentFor: .seconds(30))
        let load: @Sendable (String) async throws -> Product? = { _ in
            await gate.pass()
            return nil
        }
        #expect(try await storage.fetch(Product.self, id: "gone", policy: policy, load: load) == nil)
        #expect(try await storage.fetch(Product.self, id: "gone", policy: policy, load: load) == nil)
        #expect(gate.loads == 1)
        // The marker is no record.
        #expect(try await storage.count(Product.self) == 0)
        #expect(try await storage.count(Product.self, matching: [.hasPrefix("category", "")]) == 0)
        #expect(try await storage.fetch(Product.self, options: FetchOptions()) == [])
        #expect(try await storage.metadata(Product.self, id: "gone") == nil)
        #expect(try await storage.statistics().records == 0)
        let maintenance = try await StoreMaintenance(directory: directory)
        var exported = Data()
        let report = try maintenance.export(to: { exported.append($0) })
        #expect(report.records == 0)
        // After the window the next call loads again.
        clock.advance(by: .seconds(31))
        #expect(try await storage.fetch(Product.self, id: "gone", policy: policy, load: load) == nil)
        #expect(gate.loads == 2)
    }

    /// Every load that finds nothing leaves an entry in the `leases` database (without `absentFor`, one that
    /// ends as it is written), and leases of loads that never finished stay too: nothing removed them but a
    /// write of the same id, so a loader asked for ever new missing ids grew the file for good, outside every
    /// limit. Each new entry now removes entries that ended more than a minute ago, a few at a time.
    @Test func endedLeaseEntriesAreRemovedAsNewOnesComeIn() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        for n in 0..<100 { #expect(try await storage.fetch(Product.self, id: "missing-\(n)") { _ in nil } == nil) }
        let leases = try storage.local.leaseBook()
        func entries() throws -> Int { try storage.core.environment.read { try $0.entryCount(leases.database) } }
        #expect(try entries() == 100)
        // Within the grace, nothing ends; a remembered nil still in force stays whatever its age.
        let remembered = LoadPolicy(absentFor: .seconds(3_600))
        #expect(try await storage.fetch(Product.self, id: "held", policy: remembered) { _ in nil } == nil)
        clock.advance(by: .seconds(120))
        for n in 0..<20 { #expect(try await storage.fetch(Product.self, id: "later-\(n)") { _ in nil } == nil) }
        #expect(try entries() == 21)
        let gate = LoadGate(open: true)
        #expect(
            try await storage.fetch(Product.self, id: "held", policy: remembered) { _ in
                await gate.pass()
                return nil
            } == nil)
        #expect(gate.loads == 0)
    }

    /// A store that stopped loading kept its ended entries for good (/work/trial74.md, note 5): `purgeExpired()`,
    /// the expiry sweep and the tool's `purge-expired` now remove those that ended more than a minute ago, and
    /// leave a remembered nil still in force.
    @Test(arguments: ["purgeExpired", "sweep", "tool"])
    func purgingRemovesEndedLeaseEntries(by purger: String) async throws {
        let clock = VirtualClock()
        let directory = temporaryDirectory()
        let storage = try store(clock, directory: directory)
        for n in 0..<50 { #expect(try await storage.fetch(Product.self, id: "missing-\(n)") { _ in nil } == nil) }
        let remembered = LoadPolicy(absentFor: .seconds(3_600))
        #expect(try await storage.fetch(Product.self, id: "held", policy: remembered) { _ in nil } == nil)
        // Another type's ended entry: the tool's purge of one type leaves it.
        #expect(try await storage.fetch(Note.self, id: "other") { _ in nil } == nil)
        let leases = try storage.local.leaseBook()
        func entries() throws -> Int { try storage.core.environment.read { try $0.entryCount(leases.database) } }
        #expect(try entries() == 52)
        // Within the grace, nothing has ended for good.
        #expect(try await storage.purgeExpired() == 0)
        #expect(try entries() == 52)
        // Two leases an hour from their deadline: one of a process of this host that is gone (its pid now names
        // a process started at another time), which goes, and one of another host's, which stays.
        let schema = try await storage.core.schema(for: Product.self)
        let now = clock.wallNanoseconds()
        let current = ProcessIdentity.current
        let gone = ProcessIdentity(host: current.host, pid: current.pid, started: current.started &+ 1)
        let elsewhere = ProcessIdentity(host: current.host &+ 1, pid: 1, started: 1)
        try await storage.core.writer.perform { context in
            for (id, owner) in [("gone", gone), ("elsewhere", elsewhere)] {
                try leases.put(
                    LeaseEntry(kind: .lease, owner: owner, token: 1, deadline: now + 3_600_000_000_000),
                    key: LeaseBook.key(type: schema.number, id: Array(id.utf8)), txn: context.txn)
            }
        }
        #expect(try entries() == 54)
        clock.advance(by: .seconds(120))
        switch purger {
        case "purgeExpired":
            #expect(try await storage.purgeExpired() == 0)
            #expect(try entries() == 2)
        case "sweep":
            // A transaction removes no more entries than its batch of records (review-77 L1).
            let batch = try await storage.core.writer.performExclusive { writer in
                try RecordWriter.purgeExpiredBatch(
                    meta: storage.core.meta, writer: writer, limit: 10, removingEndedLeases: true)
            }
            #expect(batch.moreEndedLeases)
            #expect(try entries() == 44)
            #expect(
                try await ExpirySweeper.sweep(writer: storage.core.writer, meta: storage.core.meta, batchSize: 10) == 0
            )
            #expect(try entries() == 2)
        default:
            let maintenance = try await StoreMaintenance(directory: storage.core.directory)
            #expect(try await maintenance.purgeExpired(Product.storageName) == [Product.storageName: 0])
            #expect(try entries() == 3)
        }
        let gate = LoadGate(open: true)
        #expect(
            try await storage.fetch(Product.self, id: "held", policy: remembered) { _ in
                await gate.pass()
                return nil
            } == nil)
        #expect(gate.loads == 0)
    }

    /// A load that first waited on another process's lease takes its own for what is left of its
    /// `loadTimeout`, not for a whole `loadTimeout` more: its flight is given up at the end of the first one,
    /// and a lease outliving it kept every other caller (and process) waiting for a load no one ran.
    @Test func aLeaseTakenAfterWaitingEndsWithItsLoad() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let start = clock.wallNanoseconds()
        // Another host's load of the id, 20 s from its deadline.
        let (leases, leaseKey) = try await putForeignLease(
            .lease, of: "held", until: start + 20_000_000_000, in: storage)
        let gate = LoadGate()
        let caller = Task {
            try await storage.fetch(Product.self, id: "held", policy: LoadPolicy(loadTimeout: .seconds(30))) { _ in
                await gate.pass()
                return nil
            }
        }
        await clock.waitForSleepers(2)  // The flight's timer, and the wait on the other host's lease.
        clock.advance(by: .seconds(21))
        try await gate.waitForLoad()
        let lease = try #require(try storage.core.environment.read { try leases.entry(leaseKey, txn: $0) })
        #expect(lease.kind == .lease && lease.owner == .current)
        #expect(lease.deadline <= start + 30_000_000_000, "\(Double(lease.deadline - start) / 1e9) s after the start")
        gate.open()
        #expect(try await caller.value == nil)
    }

    /// How a commit ends another process's load in ``aCallerWhoseAwaitedLoadEndedInARecordGoneSinceLoads(_:)``.
    enum LoadEndingCommit: CaseIterable, Sendable {
        /// Saves the record, already expired.
        case save
        /// Saves the record, already expired, and deletes it.
        case saveThenDelete
        /// Deletes the (missing) record, then saves it, already expired (review-109 #1).
        case deleteThenSave
    }

    /// A caller waiting on another process's load whose lease a write of the id ended (the load's own result, or a
    /// save that won over it) reads that record; when it is gone by the time the caller looks (expired, evicted), the
    /// caller loads, where the ended lease's marker answered it nil as if that load had found nothing (review-107 A4).
    /// A delete in that commit after the save answers nil: what the store holds, and no load (review-86 #10).
    @Test(arguments: LoadEndingCommit.allCases)
    func aCallerWhoseAwaitedLoadEndedInARecordGoneSinceLoads(_ commit: LoadEndingCommit) async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let start = clock.wallNanoseconds()
        try await putForeignLease(.lease, of: "held", until: start + 20_000_000_000, in: storage)
        let gate = LoadGate(open: true)
        let fresh = Product(id: "held", title: "loaded here", category: "books", price: 1.5, rating: 2)
        let caller = Task {
            try await storage.fetch(Product.self, id: "held", policy: LoadPolicy(loadTimeout: .seconds(30))) { _ in
                await gate.pass()
                return fresh
            }
        }
        await clock.waitForSleepers(2)  // The flight's timer, and the wait on the other host's lease.
        // The other load's record, stored with an expiry already past: it ends the lease, and is gone at once.
        let stored = Product(id: "held", title: "stored by the other load", category: "books", price: 1.5, rating: 2)
        let past = CacheExpiration.date(Date(timeIntervalSince1970: Double(start) / 1e9 - 60))
        try await storage.write { transaction in
            if commit == .deleteThenSave { try transaction.delete(Product.self, id: "held") }
            try transaction.save(stored, expiration: past)
            if commit == .saveThenDelete { try transaction.delete(Product.self, id: "held") }
        }
        let answer = try await caller.value
        #expect(answer == (commit == .saveThenDelete ? nil : fresh))
        #expect(gate.loads == (commit == .saveThenDelete ? 0 : 1))
    }

    /// A caller that saw another process's lease held and joined a flight started before that lease was taken gets
    /// that load's nil, as the flight's starter does, when the load ended before the flight looked (review-107 A3:
    /// only the starter's first look counted, and the flight loaded once more).
    @Test func aJoinerWhoSawAnotherProcesssLeaseGetsItsNilInAFlightStartedBefore() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        _ = try await storage.core.schema(for: Product.self)
        // The flight's first look waits here until the other process's load has come and gone.
        let firstLook = holdingLook(1, of: storage)
        let gate = LoadGate(open: true)
        let starter = Task { try await fetchHeld(from: storage, through: gate) }
        try await firstLook.waitForLoad()
        // Another process takes the lease; a second caller sees it held and joins the flight.
        let now = clock.wallNanoseconds()
        try await putForeignLease(.lease, of: "held", until: now + 20_000_000_000, in: storage)
        let joiner = Task { try await fetchHeld(from: storage, through: gate) }
        try await eventually("the second caller to join the flight") { storage.core.loads.waiterCount == 2 }
        // That load finds nothing (a nil without `absentFor`, ended as it is written) before the flight looks.
        try await putForeignLease(.absent, of: "held", until: now - 1, in: storage)
        firstLook.open()
        #expect(try await joiner.value == nil)
        #expect(try await starter.value == nil)
        #expect(gate.loads == 0)
    }

    /// A load a save won over, when the saved record is gone by the time the flight looks (expired, evicted), loads
    /// again for its callers, as other processes' callers waiting on it do (review-109 #2: they got nil).
    @Test func aLoadASaveWonOverLoadsAgainWhenTheSavedRecordIsGone() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let gate = LoadGate()
        let loaded = Product(id: "held", title: "loaded here", category: "books", price: 1.5, rating: 2)
        let caller = Task {
            try await storage.fetch(Product.self, id: "held", policy: LoadPolicy(loadTimeout: .seconds(30))) { _ in
                await gate.pass()
                return loaded
            }
        }
        try await gate.waitForLoad()
        let saved = Product(id: "held", title: "saved meanwhile", category: "books", price: 1.5, rating: 2)
        let past = Date(timeIntervalSince1970: Double(clock.wallNanoseconds()) / 1e9 - 60)
        try await storage.save(saved, expiration: .date(past))
        gate.open()
        #expect(try await caller.value == loaded)
        #expect(gate.loads == 2)
        #expect(try await storage.fetch(Product.self, id: "held") == loaded)
    }

    /// A load whose lease another caller took over meanwhile (its deadline passed, say) stores nothing, and when no
    /// record is there by then, its callers wait on that caller's load and get its record (review-110 #1: they got nil).
    @Test func aLoadWhoseLeaseWasTakenOverWaitsOnTheNewLoad() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let gate = LoadGate()
        let finished = Atomic(false)
        let caller = Task {
            defer { finished.store(true, ordering: .sequentiallyConsistent) }
            return try await storage.fetch(
                Product.self, id: "held", policy: LoadPolicy(loadTimeout: .seconds(30))
            ) { id in
                await gate.pass()
                return Product(id: id, title: "loaded here", category: "books", price: 1.5, rating: 2)
            }
        }
        try await gate.waitForLoad()
        // Another host's load takes the lease over (no change logged: this load's watch sees no void).
        try await putForeignLease(.lease, of: "held", until: clock.wallNanoseconds() + 20_000_000_000, in: storage)
        gate.open()
        try await eventually("the caller to wait on the other load, or to end") {
            storage.core.leaseWaits.load(ordering: .relaxed) == 1 || finished.load(ordering: .sequentiallyConsistent)
        }
        // That load stores its record.
        let theirs = Product(id: "held", title: "loaded there", category: "books", price: 1.5, rating: 2)
        try await storage.save(theirs)
        #expect(try await caller.value == theirs)
        #expect(gate.loads == 1)
    }

    /// A load whose lease another caller takes over while it runs (seen at the next change of the id) stops, and its
    /// callers wait on that caller's load (trial105 D3: it ran on, and two loads of the id ran at once).
    @Test func aLoadWhoseLeaseIsTakenOverStopsAndWaitsOnTheNewLoad() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        let schema = try await storage.core.schema(for: Product.self)
        let gate = LoadGate()
        let caller = Task {
            try await storage.fetch(Product.self, id: "held", policy: LoadPolicy(loadTimeout: .seconds(30))) { id in
                await gate.pass()
                return Product(id: id, title: "loaded here", category: "books", price: 1.5, rating: 2)
            }
        }
        try await gate.waitForLoad()
        try await putForeignLease(.lease, of: "held", until: clock.wallNanoseconds() + 20_000_000_000, in: storage)
        // A change of the id that voids nothing (a touch) makes the load look at its lease.
        try await storage.core.writer.perform { context in context.touch(schema, id: Array("held".utf8)) }
        // With its loader still held at the gate, the caller waits on the other load.
        try await eventually("the caller to wait on the other load") {
            storage.core.leaseWaits.load(ordering: .relaxed) == 1
        }
        let theirs = Product(id: "held", title: "loaded there", category: "books", price: 1.5, rating: 2)
        try await storage.save(theirs)
        #expect(try await caller.value == theirs)
        gate.open()
        #expect(gate.loads == 1)
    }

    /// A caller that comes after a delete ended a load, while that load's flight here is still finishing, loads for
    /// itself: the delete's nil answers the callers that were waiting (trial105 D2: it joined the flight and got nil).
    @Test func aCallerAfterADeleteEndedALoadLoadsForItself() async throws {
        let clock = VirtualClock()
        let storage = try store(clock)
        try await putForeignLease(.lease, of: "held", until: clock.wallNanoseconds() + 20_000_000_000, in: storage)
        // The flight's second look (after the delete woke it) waits until the second caller has joined it.
        let secondLook = holdingLook(2, of: storage)
        let gate = LoadGate(open: true)
        let waiting = Task { try await fetchHeld(from: storage, through: gate) }
        await clock.waitForSleepers(2)  // The flight's timer, and the wait on the other host's lease.
        try await storage.delete(Product.self, id: "held")  // No record: it ends the other host's load with a nil.
        try await secondLook.waitForLoad()
        let later = Task { try await fetchHeld(from: storage, through: gate) }
        try await eventually("the later caller to join the flight") { storage.core.loads.waiterCount == 2 }
        secondLook.open()
        #expect(try await waiting.value == nil)
        #expect(try await later.value?.title == "loaded here")
        #expect(gate.loads == 1)
    }

    @Test func aSaveEndsARememberedNil() async throws {
        let storage = try store(VirtualClock())  // No timeout a loaded machine could reach.
        let policy = LoadPolicy(absentFor: .seconds(300))
        #expect(try await storage.fetch(Product.self, id: "sku_4", policy: policy) { _ in nil } == nil)
        try await storage.save(Product.sample(4))
        try await storage.delete(Product.self, id: "sku_4")
        let loaded = try await storage.fetch(Product.self, id: "sku_4", policy: policy) { _ in Product.sample(4) }
        #expect(loaded == Product.sample(4))
    }

    @Test func withoutAbsentForANilIsNotRemembered() async throws {
        let storage = try store(VirtualClock())  // No timeout a loaded machine could reach.
        let gate = LoadGate(open: true)
        for _ in 0..<3 {
            #expect(
                try await storage.fetch(Product.self, id: "none") { _ in
                    await gate.pass()
                    return nil
                } == nil)
        }
        #expect(gate.loads == 3)
    }
}
