import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

@Suite struct LoadThroughTests {
    /// A store on a VirtualClock that no test here advances: a load held at a gate never reaches the load
    /// timeout (30 s of the store's clock), however slowly a loaded machine runs the test.
    private func store(
        _ configuration: LocalStorageConfiguration = .inMemory, clock: VirtualClock = VirtualClock()
    ) throws -> LocalStorage {
        var configuration = configuration
        configuration.clock = clock
        return try LocalStorage(configuration: configuration)
    }

    @Test func thousandCallersForOneColdIDLoadOnce() async throws {
        let storage = try store()
        let gate = LoadGate()
        let results = try await withThrowingTaskGroup(of: Product?.self) { group in
            for _ in 0..<1000 {
                group.addTask {
                    try await storage.fetch(Product.self, id: "sku_7", expiration: .hours(2)) { id in
                        await gate.pass()
                        return Product(id: id, title: "loaded", category: "books", price: 1, rating: 1)
                    }
                }
            }
            try await eventually("1,000 callers waiting") { storage.core.loads.waiterCount == 1000 }
            gate.open()
            var results: [Product?] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(gate.loads == 1)
        #expect(results.count == 1000)
        #expect(results.allSatisfy { $0?.title == "loaded" })
        #expect(try await storage.fetch(Product.self, id: "sku_7")?.title == "loaded")
        #expect(try await storage.metadata(Product.self, id: "sku_7")?.expiresAt != nil)
        #expect(storage.core.loads.count == 0)
    }

    /// A loader that returns the id asked for in another Unicode normalization returns another record (ids compare by
    /// their bytes): refused with `invalidId`, nothing stored, and the lease goes back, so the next call loads at
    /// once (trial87 #4: the value was stored under the other id, and the id asked for kept its lease until the
    /// timeout and loaded again at every call).
    @Test func aLoadedValueWithTheIDInAnotherNormalizationIsRefused() async throws {
        let storage = try store()
        let (composed, decomposed) = ("x\u{E9}", "xe\u{301}")
        let policy = LoadPolicy(loadTimeout: .seconds(600))
        do {
            let loaded = try await storage.fetch(Product.self, id: composed, policy: policy) { _ in
                Product(id: decomposed, title: "other bytes", category: "books", price: 1, rating: 1)
            }
            Issue.record("the load returned \(String(describing: loaded))")
        } catch LocalStorageError.invalidId(let message) {
            #expect(message.contains("normalization"), "\(message)")
        }
        #expect(try await storage.fetch(Product.self, id: decomposed) == nil)
        // The lease went back: no entry is left for the id (one left would make the next call wait on the store's
        // virtual clock, which no one advances; review-89 T3: a time limit on the test was the only check of it).
        let schema = try await storage.core.schema(for: Product.self)
        let leases = try storage.local.leaseBook()
        let leaseKey = LeaseBook.key(type: schema.number, id: Array(composed.utf8))
        try #require(try storage.core.environment.read { try leases.entry(leaseKey, txn: $0) } == nil)
        let loaded = try await storage.fetch(Product.self, id: composed, policy: policy) { id in
            Product(id: id, title: "same bytes", category: "books", price: 1, rating: 1)
        }
        #expect(loaded?.title == "same bytes")
        #expect(try await storage.fetch(Product.self, id: composed)?.title == "same bytes")
    }

    /// A caller cancelled while it waits on another caller's load gets `CancellationError`, Swift's own, as
    /// does one cancelled before it starts (it was `storageError(code: -1, …)`); the load goes on for the others.
    @Test func aCancelledCallerGetsCancellationError() async throws {
        let storage = try store()
        let gate = LoadGate()
        let load: @Sendable (String) async throws -> Product? = { id in
            await gate.pass()
            return Product(id: id, title: "loaded", category: "books", price: 1, rating: 1)
        }
        let holder = Task { try await storage.fetch(Product.self, id: "sku_c", expiration: .hours(1), load: load) }
        try await gate.waitForLoad()
        let waiter = Task { try await storage.fetch(Product.self, id: "sku_c", expiration: .hours(1), load: load) }
        try await eventually("the second caller waiting") { storage.core.loads.waiterCount == 2 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await storage.fetch(Product.self, id: "sku_c", expiration: .hours(1), load: load)
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        gate.open()
        #expect(try await holder.value?.title == "loaded")
        #expect(gate.loads == 1)
    }

    /// A load given up after `loadTimeout` (its loader ignored the cancellation) stores nothing when it ends
    /// later. It used to store its late result; then it tried and found its lease's deadline passed; now its outcome
    /// is no longer awaited at all (review-105 F4), and the lease went back with the give-up.
    @Test func aLoadGivenUpStoresNothingWhenItEndsLate() async throws {
        let clock = VirtualClock()
        let storage = try store(clock: clock)
        let gate = LoadGate()
        let policy = LoadPolicy(loadTimeout: .seconds(1))
        let returned = Atomic(false)
        let caller = Task {
            try await storage.fetch(Product.self, id: "sku_late", policy: policy) { id in
                await gate.pass()
                returned.store(true, ordering: .sequentiallyConsistent)
                return Product(id: id, title: "late", category: "books", price: 1, rating: 1)
            }
        }
        try await gate.waitForLoad()
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        await #expect(throws: LocalStorageError.loadTimedOut(id: "sku_late")) { try await caller.value }
        #expect(await eventually { try Self.lease(of: "sku_late", in: storage) == nil }, "the lease went back")
        gate.open()
        try await eventually("the loader to return") { returned.load(ordering: .sequentiallyConsistent) }
        try await storage.save(Product.sample(2))  // a commit of the writer after the loader returned
        #expect(try await storage.fetch(Product.self, id: "sku_late") == nil)
        #expect(storage.core.unstoredLoads.load(ordering: .relaxed) == 0, "nothing tried to store the late value")
        #expect(gate.loads == 1)
    }

    /// The lease of `id` (a `Product`) in `storage`, if any.
    private static func lease(of id: String, in storage: LocalStorage) throws -> LeaseEntry? {
        guard let schema = storage.core.cachedSchema(for: Product.self) else { return nil }
        let leases = try storage.local.leaseBook()
        let leaseKey = LeaseBook.key(type: schema.number, id: Array(id.utf8))
        return try storage.core.environment.read { try leases.entry(leaseKey, txn: $0) }
    }

    @Test func aFreshRecordIsReturnedWithoutLoading() async throws {
        let storage = try store()
        try await storage.save(Product.sample(1))
        let gate = LoadGate(open: true)
        let found = try await storage.repository(Product.self).fetch(id: "sku_1") { _ in
            await gate.pass()
            return nil
        }
        #expect(found == Product.sample(1))
        #expect(gate.loads == 0)
    }

    @Test func theLoadersErrorReachesEveryWaiterAndNothingIsStored() async throws {
        let storage = try store()
        let gate = LoadGate()
        let errors = try await withThrowingTaskGroup(of: (any Error)?.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do {
                        _ = try await storage.fetch(Product.self, id: "sku_9") { _ in
                            await gate.pass()
                            throw CatalogError(code: 503)
                        }
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            try await eventually("50 callers waiting") { storage.core.loads.waiterCount == 50 }
            gate.open()
            var errors: [(any Error)?] = []
            for try await error in group { errors.append(error) }
            return errors
        }
        #expect(gate.loads == 1)
        #expect(errors.allSatisfy { ($0 as? CatalogError) == CatalogError(code: 503) })
        #expect(try await storage.count(Product.self) == 0)
        // Nothing remembered: the next call loads again.
        let again = try await storage.fetch(Product.self, id: "sku_9") { id in
            await gate.pass()
            return Product(id: id, title: "second", category: "toys", price: 2, rating: 2)
        }
        #expect(again?.title == "second")
        #expect(gate.loads == 2)
    }

    @Test func waitersGetLoadTimedOutAfterTheTimeout() async throws {
        let clock = VirtualClock()
        let storage = try store(clock: clock)
        let policy = LoadPolicy(loadTimeout: .seconds(5))
        let outcomes = try await withThrowingTaskGroup(of: (any Error)?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do {
                        _ = try await storage.fetch(Product.self, id: "slow", policy: policy) { _ in
                            // Hangs until the timeout cancels it.
                            while true { try await Task.sleep(for: .seconds(3600)) }
                        }
                        return nil
                    } catch {
                        return error
                    }
                }
            }
            try await eventually("10 callers waiting") { storage.core.loads.waiterCount == 10 }
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(6))
            var outcomes: [(any Error)?] = []
            for try await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes.allSatisfy { ($0 as? LocalStorageError) == .loadTimedOut(id: "slow") })
        #expect(try await storage.count(Product.self) == 0)
    }

    /// A flight given up at its timeout while its lease's commit waited behind a long write has answered its
    /// callers (`loadTimedOut`): its loader must not run afterwards (a trip to the source for nothing).
    @Test(.timeLimit(.minutes(5))) func aFlightGivenUpBeforeItsLoadStartsDoesNotAskTheSource() async throws {
        let clock = VirtualClock()
        let storage = try store(clock: clock)
        _ = try await storage.count(Product.self)  // Registered: the fetch below needs the writer only for its lease.
        let hold = try await WriterHold(storage)
        let first = Mutex(0)
        let policy = LoadPolicy(loadTimeout: .seconds(1))
        let given = Task {
            try await storage.fetch(Product.self, id: "sku_1", policy: policy) { id in
                first.withLock { $0 += 1 }
                return Product.sample(1)
            }
        }
        try await eventually("the lease to queue") { storage.core.writer.queuedCount >= 1 }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(2))
        await #expect(throws: LocalStorageError.loadTimedOut(id: "sku_1")) { try await given.value }
        try await hold.release()
        let second = Mutex(0)
        let again = Task {
            try await storage.fetch(Product.self, id: "sku_1", policy: policy) { id in
                second.withLock { $0 += 1 }
                return Product.sample(1)
            }
        }
        // A caller waiting on a lease of this process looks again every 50 ms of the store's clock.
        let done = Atomic(false)
        let watching = Task {
            _ = try? await again.value
            done.store(true, ordering: .sequentiallyConsistent)
        }
        try await eventually("the second fetch") {
            clock.advance(by: .milliseconds(50))
            return done.load(ordering: .sequentiallyConsistent)
        }
        await watching.value
        let loaded = try await again.value
        #expect(loaded == Product.sample(1))
        #expect(first.withLock { $0 } == 0)
        #expect(second.withLock { $0 } == 1)
    }

    /// A lease whose commit waited behind a long write ends when its flight is given up, not a whole
    /// `loadTimeout` after the commit (its deadline is the flight's), and a loader that returns after its callers got
    /// `loadTimedOut` stores nothing (it was stored when the writer had been busy; trial61 #2).
    @Test(.timeLimit(.minutes(5))) func aLeaseTakenLateEndsWithItsFlight() async throws {
        let clock = VirtualClock()
        let storage = try store(clock: clock)
        _ = try await storage.count(Product.self)  // Registered: the fetch below needs the writer only for its lease.
        let hold = try await WriterHold(storage)
        let gate = LoadGate()
        let policy = LoadPolicy(loadTimeout: .seconds(10))
        let returned = Atomic(false)
        let started = clock.wallNanoseconds()
        let caller = Task {
            try await storage.fetch(Product.self, id: "sku_late", policy: policy) { id in
                await gate.pass()  // Ignores cancellation, as many loaders do.
                returned.store(true, ordering: .sequentiallyConsistent)
                return Product(id: id, title: "late", category: "books", price: 1, rating: 1)
            }
        }
        try await eventually("the lease to queue") { storage.core.writer.queuedCount >= 1 }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(9))  // The writer is busy for 9 of the flight's 10 seconds.
        try await hold.release()
        try await gate.waitForLoad()
        let lease = try #require(try Self.lease(of: "sku_late", in: storage))
        #expect(lease.deadline <= started + 10_000_000_000, "the lease ends with its flight, 10 s after the call")
        clock.advance(by: .seconds(2))
        await #expect(throws: LocalStorageError.loadTimedOut(id: "sku_late")) { try await caller.value }
        gate.open()
        try await eventually("the loader to return") { returned.load(ordering: .sequentiallyConsistent) }
        try await storage.save(Product.sample(2))  // a commit of the writer after the loader returned
        #expect(try await storage.fetch(Product.self, id: "sku_late") == nil)
    }

    /// A memory store over a disk store (each loading through the next) asks both for the same type and id:
    /// each store's first type has the same number, and the guard against a loader waiting on itself took the
    /// inner load for the outer one (`loadTimedOut` at once, every cold id).
    @Test(.timeLimit(.minutes(5))) func aLoadThroughOneStoreMayLoadTheSameIDThroughAnother() async throws {
        let memory = try store()
        let disk = try store()
        let calls = Mutex(0)
        let product = try await memory.fetch(Product.self, id: "sku_42", expiration: .minutes(5)) { id in
            try await disk.fetch(Product.self, id: id, expiration: .hours(1)) { id in
                calls.withLock { $0 += 1 }
                return Product(id: id, title: "from the source", category: "books", price: 1, rating: 1)
            }
        }
        #expect(product?.title == "from the source")
        #expect(calls.withLock { $0 } == 1)
        #expect(try await memory.fetch(Product.self, id: "sku_42")?.title == "from the source")
        #expect(try await disk.fetch(Product.self, id: "sku_42")?.title == "from the source")
    }

    /// A loader that loads its own id through the cache, directly or through the load of another id, gets
    /// `loadTimedOut` at once (it waited on itself until its `loadTimeout`: here an hour of a clock nothing
    /// advances, so the old code hangs until the time limit). A loader that loads another id gets it, and the
    /// id can be loaded afterwards.
    @Test(.timeLimit(.minutes(5))) func aLoaderThatLoadsItsOwnIDFailsAtOnce() async throws {
        let storage = try store()
        let policy = LoadPolicy(loadTimeout: .seconds(3600))
        @Sendable func product(_ id: String) -> Product {
            Product(id: id, title: "loaded", category: "books", price: 1, rating: 1)
        }
        await #expect(throws: LocalStorageError.loadTimedOut(id: "sku_self")) {
            try await storage.fetch(Product.self, id: "sku_self", policy: policy) { id in
                try await storage.fetch(Product.self, id: id, policy: policy) { product($0) }
            }
        }
        await #expect(throws: LocalStorageError.loadTimedOut(id: "sku_a")) {
            try await storage.fetch(Product.self, id: "sku_a", policy: policy) { _ in
                try await storage.fetch(Product.self, id: "sku_b", policy: policy) { _ in
                    try await storage.fetch(Product.self, id: "sku_a", policy: policy) { product($0) }
                }
            }
        }
        let outer = try await storage.fetch(Product.self, id: "sku_outer", policy: policy) { id in
            let inner = try await storage.fetch(Product.self, id: "sku_inner", policy: policy) { product($0) }
            return inner.map { Product(id: id, title: "around \($0.id)", category: "books", price: 1, rating: 1) }
        }
        #expect(outer?.title == "around sku_inner")
        #expect(try await storage.fetch(Product.self, id: "sku_self", policy: policy) { product($0) }?.id == "sku_self")
        #expect(try await storage.count(Product.self) == 3)
        #expect(storage.core.loads.count == 0)
    }

    /// A caller that joins a load with a shorter `loadTimeout` than the caller that started it gets
    /// `loadTimedOut` at its own deadline, and the load goes on for the first (joiners used to wait on the
    /// first caller's timeout). When one joins with a longer timeout, the load is given up at the first
    /// caller's deadline (also the lease's in the store) and the joiner loads anew within its own: it got
    /// `loadTimedOut` with the first caller, long before its own timeout (trial61 #1, review-63 #5).
    @Test(.timeLimit(.minutes(5)), arguments: [(first: 20, joiner: 1), (first: 1, joiner: 20)])
    func aJoinerWaitsNoLongerThanItsOwnLoadTimeout(timeouts: (first: Int, joiner: Int)) async throws {
        let clock = VirtualClock()
        let storage = try store(clock: clock)
        let gate = LoadGate()
        func caller(_ seconds: Int) -> Task<Product?, any Error> {
            Task {
                let policy = LoadPolicy(loadTimeout: .seconds(seconds))
                return try await storage.fetch(Product.self, id: "sku_j", policy: policy) { id in
                    await gate.pass()
                    return Product(id: id, title: "loaded", category: "books", price: 1, rating: 1)
                }
            }
        }
        let first = caller(timeouts.first)
        try await gate.waitForLoad()
        let joiner = caller(timeouts.joiner)
        try await eventually("the joiner waiting") { storage.core.loads.waiterCount == 2 }
        await clock.waitForSleepers(2)
        clock.advance(by: .seconds(2))
        if timeouts.joiner < timeouts.first {
            await #expect(throws: LocalStorageError.loadTimedOut(id: "sku_j")) { try await joiner.value }
            #expect(storage.core.loads.waiterCount == 1)
            gate.open()
            #expect(try await first.value?.title == "loaded")
            #expect(gate.loads == 1)
        } else {
            await #expect(throws: LocalStorageError.loadTimedOut(id: "sku_j")) { try await first.value }
            // The joiner's own load (the first one's lease ended with it).
            try await eventually("the joiner's load") { gate.loads == 2 }
            gate.open()
            #expect(try await joiner.value?.title == "loaded")
        }
        #expect(try await storage.fetch(Product.self, id: "sku_j")?.title == "loaded")
    }

    @Test func aSaveDuringASlowLoadWins() async throws {
        let storage = try store(diskConfiguration())
        let gate = LoadGate()
        let caller = Task {
            try await storage.fetch(Product.self, id: "sku_5", expiration: .hours(1)) { id in
                await gate.pass()
                return Product(id: id, title: "old from the source", category: "books", price: 1, rating: 1)
            }
        }
        try await gate.waitForLoad()
        let saved = Product(id: "sku_5", title: "written meanwhile", category: "toys", price: 9, rating: 5)
        try await storage.save(saved)
        gate.open()
        #expect(try await caller.value == saved)
        #expect(try await storage.fetch(Product.self, id: "sku_5") == saved)
        #expect(try await storage.metadata(Product.self, id: "sku_5")?.expiresAt == nil)
    }

    @Test func aDeleteDuringASlowLoadWins() async throws {
        let storage = try store()
        let gate = LoadGate()
        let caller = Task {
            try await storage.fetch(Product.self, id: "sku_6") { id in
                await gate.pass()
                return Product(id: id, title: "old", category: "books", price: 1, rating: 1)
            }
        }
        try await gate.waitForLoad()
        try await storage.delete(Product.self, id: "sku_6")
        gate.open()
        #expect(try await caller.value == nil)
        #expect(try await storage.fetch(Product.self, id: "sku_6") == nil)
    }

    /// A write that voids the lease answers the load's callers in this process with what it left, whatever the
    /// loader does afterwards: they do not wait for it, nor get its error (trial86 #5).
    @Test(arguments: [false, true])
    func theLoadsCallersGetWhatAWriteDuringTheLoadLeftNotTheLoadersError(deletes: Bool) async throws {
        struct SourceDown: Error {}
        let storage = try store(diskConfiguration())
        let gate = LoadGate()
        let answered = DecodeCounter()  // a Sendable counter
        let callers = (0..<3).map { _ in
            Task {
                defer { answered.increment() }
                return try await storage.fetch(Product.self, id: "sku_7") { _ -> Product? in
                    await gate.pass()
                    throw SourceDown()
                }
            }
        }
        try await gate.waitForLoad()
        let saved = Product(id: "sku_7", title: "written meanwhile", category: "toys", price: 9, rating: 5)
        if deletes {
            try await storage.delete(Product.self, id: "sku_7")
        } else {
            try await storage.save(saved)
        }
        // Answered while the loader still waits at its gate.
        try await eventually("the callers answered") { answered.value == 3 }
        for caller in callers { #expect(try await caller.value == (deletes ? nil : saved)) }
        #expect(gate.loads == 1)
        // The loader, let go of, throws; nothing of it reaches the store.
        gate.open()
        #expect(try await storage.fetch(Product.self, id: "sku_7") == (deletes ? nil : saved))
    }

    @Test func aLoadedRecordWithAnotherIDIsRefused() async throws {
        let storage = try store()
        await #expect(throws: LocalStorageError.self) {
            _ = try await storage.fetch(Product.self, id: "sku_1") { _ in Product.sample(2) }
        }
        #expect(try await storage.count(Product.self) == 0)
        // The lease was given back: a later load runs.
        #expect(try await storage.fetch(Product.self, id: "sku_1") { _ in Product.sample(1) } == Product.sample(1))
    }

    /// A loaded record the store refuses (larger than `maxBytes`) gives the lease back: the next caller loads
    /// at once instead of waiting out the lease (on this clock, which no one advances, it would wait forever).
    @Test(.timeLimit(.minutes(5))) func aLoadedRecordTheStoreRefusesGivesTheLeaseBack() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.limits = StorageLimits(maxBytes: 300)
        let storage = try store(configuration)
        var product = Product.sample(1)
        product.title = String(repeating: "x", count: 1_000)
        let huge = product
        do {
            _ = try await storage.fetch(Product.self, id: "sku_1") { _ in huge }
            Issue.record("a record over maxBytes was stored")
        } catch LocalStorageError.recordTooLarge(let id, _, let limit) {
            #expect(id == "sku_1" && limit == 300)
        }
        #expect(try await storage.count(Product.self) == 0)
        #expect(try await storage.fetch(Product.self, id: "sku_1") { _ in Product.sample(1) } == Product.sample(1))
    }

    /// The evictor picks the soonest expired record first, which is what a load through the cache reloads. An
    /// eviction is the store making room, not a write of the id: the load's value (newer than the evicted
    /// copy) is stored and returned. It used to void the lease, so the callers got nil and nothing was stored.
    @Test(.timeLimit(.minutes(5))) func evictingTheExpiredCopyOfALoadingIDKeepsTheLoad() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.limits = StorageLimits(maxRecords: 2)
        let clock = VirtualClock()
        let storage = try store(configuration, clock: clock)
        try await storage.save(Product.sample(1), expiration: .seconds(1))
        try await storage.save(Product.sample(2), expiration: .never)
        clock.advance(by: .seconds(2))
        let gate = LoadGate()
        var reloaded = Product.sample(1)
        reloaded.title = "reloaded"
        let fresh = reloaded
        let loading = Task {
            try await storage.fetch(Product.self, id: fresh.id, expiration: .hours(1)) { _ in
                await gate.pass()
                return fresh
            }
        }
        try await gate.waitForLoad()
        try await storage.save(Product.sample(3), expiration: .never)  // Evicts the expired copy of sku_1.
        #expect(try await storage.count(Product.self) == 2)
        gate.open()
        #expect(try await loading.value == fresh)
        #expect(try await storage.fetch(Product.self, id: fresh.id) == fresh)
        #expect(storage.core.unstoredLoads.load(ordering: .relaxed) == 0)
    }

    /// An expiration no record can take fails before `load` runs (no trip to the backend for nothing) and
    /// leaves no lease behind.
    @Test(.timeLimit(.minutes(5))) func anExpirationNoRecordCanTakeFailsBeforeLoading() async throws {
        let storage = try store()
        let loads = Mutex(0)
        for expiration in [CacheExpiration.seconds(.nan), .hours(-.infinity), .days(1e300)] {
            do {
                _ = try await storage.fetch(Product.self, id: "sku_1", expiration: expiration) { id in
                    loads.withLock { $0 += 1 }
                    return Product.sample(1)
                }
                Issue.record("\(expiration) was accepted")
            } catch LocalStorageError.invalidExpiration {}
        }
        #expect(loads.withLock { $0 } == 0)
        let loaded = try await storage.fetch(Product.self, id: "sku_1", expiration: .hours(1)) { _ in
            loads.withLock { $0 += 1 }
            return Product.sample(1)
        }
        #expect(loaded == Product.sample(1) && loads.withLock { $0 } == 1)
    }

    @Test func typedIDsReachTheLoader() async throws {
        let storage = try store()
        let ticket = try await storage.fetch(Ticket.self, id: 42) { id in Ticket(id: id, title: "#\(id)") }
        #expect(ticket == Ticket(id: 42, title: "#42"))
        #expect(try await storage.fetch(Ticket.self, id: 42) == ticket)
    }
}
