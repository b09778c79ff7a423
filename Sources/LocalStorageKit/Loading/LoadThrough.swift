/// Loading through the cache (`fetch(_:id:policy:load:)`): one load per id in this process
/// (``LoadFlights``), across the processes on the store (a lease in the `leases` database, see
/// ``LeaseBook``) and, with a ``LoadCoordinator`` (the shared tier), across the instances on it; a write
/// wins over a load.
struct LoadThrough: Sendable {
    /// The local store whose records and leases the load reads and writes.
    let store: LocalRecordStore
    /// The tier above that loads once among instances (nil: this store's processes only).
    let coordinator: (any LoadCoordinator)?

    var core: StoreCore { store.core }

    /// The live record `id`, or what `load` returns for it, loaded once however many callers ask.
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, id: T.ID, policy: LoadPolicy, schema: TypeSchema,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        let policy = try policy.validated(at: core.clock.wallNanoseconds())
        let name = try StorageKey.string(for: id)
        let key = try RecordWriter.key(for: name)
        if let coordinator {
            if policy.refreshAfter == nil {
                if let value = try await coordinator.fetchBeforeLoading(T.self, id: name, schema: schema) {
                    return value
                }
            } else {
                // The local record (and its update time) answers only once the tier lets it.
                try await coordinator.settle()
            }
        }
        let look = try await store.look(T.self, id: name, key: key, schema: schema)
        if let value = look.value {
            if let refreshAfter = policy.refreshAfter,
                core.clock.wallNanoseconds() &- look.updatedAt >= refreshAfter.nanoseconds
            {
                refreshInBackground(
                    T.self, id: id, name: name, key: key, schema: schema, policy: policy,
                    served: (look.updatedAt, look.expiresAt), load: load)
            }
            return value
        }
        // The lease entry's clocks are read only on a miss (a hit, the common case, needs neither).
        let now = core.clock.leaseMoment()
        if look.entry?.remembersAbsence(at: now) == true { return nil }
        // The lease another load held at this look: if that load finds nothing before this caller's flight looks
        // again, the caller gets its nil, as the callers waiting on it do, and loads nothing (review-105 F9: the nil
        // of a load without `absentFor` ends as it is written, and the flight's look took it for an old one).
        let awaited = look.entry.flatMap { $0.holds(at: now) ? $0.token : nil }
        // The nil of a load that had already ended at this look (a delete voided it, and its flight here had not
        // finished yet): not an answer to this caller, who came after it (trial105 D2).
        let endedBefore = look.entry.flatMap { $0.kind == .absent ? $0.token : nil }
        await core.loads.pauseForTests(at: .afterFirstLook)
        let flight = LoadFlights.Key(type: schema.number, id: key)
        // One deadline for the whole call, however many flights it joins (review-91 R2: a caller that joined a
        // refresh a write then overtook waited a whole new `loadTimeout` in the flight it started next).
        let deadline = core.clock.uptime() + policy.loadTimeout
        var loaded: (any Sendable)?
        while true {
            do {
                loaded = try await core.loads.join(
                    flight, id: name, until: deadline, timeout: policy.loadTimeout, awaiting: awaited, clock: core.clock
                ) { givenUpAt, awaited in
                    try await self.loadOnce(
                        T.self, id: id, name: name, key: key, schema: schema, policy: policy, refreshing: nil,
                        awaited: awaited, givenUpAt: givenUpAt, load: load)
                }
            } catch is RefreshOvertaken {
                // The flight joined was a background refresh a write made pointless: this caller loads for itself.
                continue
            }
            // A nil that is still that ended load's, nothing newer in its place: this caller loads in a flight of its
            // own (the one it joined has ended).
            if loaded == nil, let endedBefore,
                let entry = try await store.look(T.self, id: name, key: key, schema: schema).entry,
                entry.kind == .absent, entry.token == endedBefore
            {
                continue
            }
            break
        }
        guard let loaded else { return nil }
        if let value = loaded as? T { return value }
        // Another Swift type with the same storage name loaded it: read it back as this one.
        return try await store.look(T.self, id: name, key: key, schema: schema).value
    }

    /// Starts one background reload of a record served stale (unless one is under way); a failure is
    /// logged and keeps the record.
    private func refreshInBackground<T: LocalStorable>(
        _ type: T.Type, id: T.ID, name: String, key: [UInt8], schema: TypeSchema, policy: LoadPolicy,
        served: RefreshedRecordStamp, load: @escaping @Sendable (T.ID) async throws -> T?
    ) {
        let flight = LoadFlights.Key(type: schema.number, id: key)
        let logger = store.logger
        core.loads.startIfIdle(flight, id: name, timeout: policy.loadTimeout, clock: core.clock) { givenUpAt, awaited in
            do {
                return try await self.loadOnce(
                    T.self, id: id, name: name, key: key, schema: schema, policy: policy, refreshing: served,
                    awaited: awaited, givenUpAt: givenUpAt, load: load)
            } catch let error as RefreshOvertaken {
                throw error  // Not a failure: the record it served is gone or changed.
            } catch {
                let reported = (error as? CallerError)?.underlying ?? error
                logger?.log(
                    level: .warning, message: "A background refresh failed; the record is kept until it expires",
                    metadata: ["type": schema.name, "id": name, "error": "\(reported)"])
                throw error
            }
        }
    }

    /// Loads the record once across the processes on the store: takes the lease (or waits for the
    /// process holding it, then looks again), runs `load` (through the coordinator, when there is one),
    /// and stores its result while the lease holds. With `refreshing`, the live record served stale with that
    /// update time and expiry is reloaded, unless a write of the id (or its expiry) came first: then it throws
    /// ``RefreshOvertaken`` without loading. `awaited` holds the tokens of the leases the flight's callers saw held
    /// before they joined it: a nil those loads remember answers them too; the flight adds each lease it waits on, is
    /// refused by or takes. When a write that won over the flight's load left a record that is gone by the time it
    /// looks (or another caller's load has begun since), it goes round again (``LookAgain``). The flight running this
    /// is given up at `givenUpAt` (the clock's uptime): a lease taken later (after waiting on another process's, or on
    /// the writer) ends then too, not a whole `loadTimeout` after it was taken.
    private func loadOnce<T: LocalStorable>(
        _ type: T.Type, id: T.ID, name: String, key: [UInt8], schema: TypeSchema, policy: LoadPolicy,
        refreshing: RefreshedRecordStamp?, awaited answering: LoadFlights.AwaitedLoads, givenUpAt: Duration,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        let waiter = RecordWatch(core: core, typeName: schema.name, id: name)
        defer { waiter.end() }
        let leaseKey = LeaseBook.key(type: schema.number, id: key)
        // The lease waited on last (each new one counts once in `leaseWaits`). `answering` holds the loads whose nil
        // answers the flight's callers: each one of them saw before the flight (review-105 F9, review-107 A3), each it
        // waited on, each whose lease refused the flight one (review-107 A2), and its own.
        var awaited: UInt64?
        while true {
            try Task.checkCancellation()
            await core.loads.pauseForTests(at: .beforeLook)
            let look = try await store.look(T.self, id: name, key: key, schema: schema)
            if let refreshing {
                // A write of the id since the record was served stale overtakes the refresh, as one while it loads
                // does (trial90 #1: a delete, `deleteAll` or `setExpiration` right after the fetch was undone): a
                // delete (or an expiry) leaves nothing to refresh, a save or a new expiry a record to keep.
                guard let value = look.value else {
                    // Unless the load it waited on (another process's refresh) found nothing: its callers get that
                    // nil, as after any load they waited on (review-91 R3: they loaded once more).
                    if let entry = look.entry, entry.kind == .absent, answering.contains(entry.token) { return nil }
                    throw RefreshOvertaken()
                }
                if look.updatedAt != refreshing.updatedAt || look.expiresAt != refreshing.expiresAt { return value }
            } else if let value = look.value {
                return value
            }
            let now = core.clock.leaseMoment()
            if let entry = look.entry {
                if entry.holds(at: now) {
                    if awaited != entry.token { core.leaseWaits.add(1, ordering: .relaxed) }
                    awaited = entry.token
                    answering.insert(entry.token)
                    // The holder's own host can tell sooner that it died: look again every 50 ms.
                    let left = entry.timeLeft(at: now)
                    let same = entry.owner.host == ProcessIdentity.currentHost
                    await waiter.wait(for: same ? min(left, .milliseconds(50)) : left)
                    continue
                }
                if refreshing == nil, entry.remembersAbsence(at: now) { return nil }
                if entry.kind == .absent, answering.contains(entry.token) { return nil }
            }
            await core.loads.pauseForTests(at: .beforeTakingLease)
            let token = UInt64.random(in: 1...UInt64.max)
            switch try await takeLease(
                leaseKey, token: token, refreshing: refreshing, key: key, schema: schema, givenUpAt: givenUpAt)
            {
            case .taken:
                // A delete that ends this load answers the flight nil, should the flight go round (``LookAgain``).
                answering.insert(token)
            case .refused(let holder):
                if let holder { answering.insert(holder) }
                await core.loads.pauseForTests(at: .afterRefusal)
                continue
            // Told by the lease's commit, whose clock may be ahead of the look's (the look could see the record live
            // again, and the refresh would go round without end: review-91 D1).
            case .overtaken: throw RefreshOvertaken()
            }
            let request = LeasedLoad(
                through: self, id: id, name: name, key: key, leaseKey: leaseKey, token: token, schema: schema,
                policy: policy, refreshing: refreshing, givenUpAt: givenUpAt, load: load)
            if let coordinator { return try await coordinator.load(request) }
            do {
                return try await runLoad(request)
            } catch is LookAgain {
                continue
            }
        }
    }
}

/// The update time and expiry of the record a background refresh served stale: what must still be there for it to load.
typealias RefreshedRecordStamp = (updatedAt: Int64, expiresAt: Int64)

/// A background refresh that found the record it served stale gone (deleted, expired or evicted) or changed (a save,
/// a new expiry) before it took its lease: it loads nothing and is not logged as a failure; a caller that joined its
/// flight loads for itself.
struct RefreshOvertaken: Error {}
