/// The lease steps of a load through the cache, each one commit of the writer: take the lease, store
/// the loaded record while the lease holds (compare-and-set on the lease's token), remember a nil, give
/// the lease back after a failure.
extension LoadThrough {
    /// What taking a load's lease came to.
    enum LeaseTake {
        case taken
        /// The record is live (a load of a missing record needs none: nil), or another live lease holds it (its token).
        case refused(by: UInt64?)
        /// For a refresh: the record it served stale is gone or changed (see ``RefreshOvertaken``).
        case overtaken
    }

    /// Takes the lease on `leaseKey` under `token` unless the record is live or another live lease holds it; for a
    /// refresh (`refreshing`: the update time and expiry of the record it served), unless the live record is no
    /// longer that one. The lease ends when the flight is given up (`givenUpAt`, on the clock's uptime), however
    /// long its commit waited for the writer.
    func takeLease(
        _ leaseKey: [UInt8], token: UInt64, refreshing: RefreshedRecordStamp?, key: [UInt8],
        schema: TypeSchema, givenUpAt: Duration
    ) async throws -> LeaseTake {
        let leases = try store.leaseBook()
        let clock = core.clock
        return try await core.writer.perform { context in
            let txn = context.txn
            let view = try txn.get(schema.records, key: key).map { try RecordView(fixedPartOf: $0) }
            let live = view.flatMap { $0.isExpired(at: context.now) ? nil : $0 }
            if let refreshing {
                // A write that committed since the record was served (a delete, a save, a new expiry) came first.
                guard let live, live.updatedAt == refreshing.updatedAt, live.expiresAt == refreshing.expiresAt else {
                    return .overtaken
                }
            } else if live != nil {
                return .refused(by: nil)
            }
            let now = clock.leaseMoment()
            if let entry = try leases.entry(leaseKey, txn: txn), entry.holds(at: now) {
                return .refused(by: entry.token)
            }
            let left = max(.milliseconds(1), givenUpAt - clock.uptime())
            let lease = LeaseEntry(kind: .lease, token: token, now: now, left: left)
            try leases.put(lease, key: leaseKey, context: context)
            try leases.sweep(now: now, txn: txn)
            return .taken
        }
    }

    /// Runs the request's `load` under its lease and stores what it returns while the lease still holds.
    /// Returns the loaded value, or, when a write of the id voided the lease meanwhile, what the store
    /// holds after that write: at once, whatever the loader does afterwards (it is cancelled; what it returns or
    /// throws then is dropped), as the callers other processes have waiting on the load get it (trial86 #5).
    ///
    /// - Throws: the loader's own error as a ``CallerError``; what storing its result threw (`invalidId`,
    ///   `recordTooLarge`, `storageFull`, …). The lease is given back first either way. ``LookAgain`` when the write
    ///   that won left a record that is gone by now.
    func runLoad<T: LocalStorable>(_ request: LeasedLoad<T>) async throws -> T? {
        if Task.isCancelled {
            // The flight was given up (its timeout passed while the lease's commit waited for the writer): its
            // callers have their answer, and a result could not be stored; the source is not asked.
            await request.giveBack()
            throw CancellationError()
        }
        let loaded: T?
        switch await loadUnlessVoided(request) {
        case .voided:
            return try await holding(after: request)
        case .loaded(.failure(let error)):
            await request.giveBack()
            throw CallerError(underlying: error)
        case .loaded(.success(let value)):
            loaded = value
        }
        do {
            if let value = loaded {
                if try await storeLoaded(value, for: request) { return value }
            } else {
                try await rememberAbsence(request, refreshing: request.refreshing != nil)
            }
        } catch {
            // Nothing was stored (the record does not fit, the store is full, the id is not the one asked
            // for): the lease goes back at once, so the next caller loads instead of waiting out its deadline.
            await request.giveBack()
            throw error
        }
        return try await holding(after: request)
    }

    /// A load whose lease a write that left a record voided, when that record is gone by the time the flight looks
    /// (evicted, expired), or another caller's load of the id has begun since: the flight looks again, and loads or
    /// waits on that load, as the callers other processes have waiting on it do (review-109 #2, review-110 #1: its own
    /// callers got nil). The loader it ran may still be running meanwhile (cancelled, its result dropped).
    struct LookAgain: Error {}

    /// What the store holds after the request's load ended (the nil it remembered, or a write that won over it).
    ///
    /// - Throws: ``LookAgain`` when there is no record and a write of one ended the load (a written mark under any
    ///   token), or another caller's lease holds; for a refresh, ``RefreshOvertaken`` instead (a caller that joined it
    ///   loads for itself, review-110 #4).
    private func holding<T: LocalStorable>(after request: LeasedLoad<T>) async throws -> T? {
        let look = try await store.look(T.self, id: request.name, key: request.key, schema: request.schema)
        guard look.value == nil, let entry = look.entry else { return look.value }
        let someoneElseLoads = entry.token != request.token && entry.holds(at: core.clock.leaseMoment())
        guard entry.kind == .written || someoneElseLoads else { return nil }
        if request.refreshing != nil { throw RefreshOvertaken() }
        throw LookAgain()
    }

    /// What ended the wait for a load: its outcome, or a write that voided its lease first.
    enum LoadEnd<T: Sendable>: Sendable {
        case loaded(Result<T?, any Error>)
        case voided
    }

    /// Runs the request's `load` in a task of its own (which inherits this one's task-local values), and watches
    /// its lease in this store meanwhile (with a shared tier too: another instance's write of the id reaches this
    /// store, and voids the lease, before its notice is answered): returns the load's outcome, or `.voided` as soon as a write of the id has voided the
    /// lease (the load is then cancelled, and its outcome dropped whenever it comes), or before the load failed.
    /// When this task is cancelled (the flight given up, or left by its callers), so is the load, whose outcome is
    /// no longer awaited: it ends as a `CancellationError`, and the lease goes back. A loader that ignores the
    /// cancellation held the flight, its watches and so the store open for as long as it ran (review-105 F4); what
    /// it returns is dropped. With `stoppingWhenTakenOver`, another caller's lease in place of this load's counts as a
    /// void too (trial105 D3); the shared tier's load, whose lease on the server still holds then, goes on.
    func loadUnlessVoided<T: LocalStorable>(
        _ request: LeasedLoad<T>, stoppingWhenTakenOver: Bool = true
    ) async -> LoadEnd<T> {
        let end = FirstOutcome<LoadEnd<T>>()
        // The loader's task holds the caller's closure and nothing of the store: after a write voided the lease it
        // runs on for as long as the closure does, and must not keep the store open meanwhile.
        let (load, id) = (request.load, request.id)
        let loader = Task {
            do {
                end.offer(.loaded(.success(try await load(id))))
            } catch {
                end.offer(.loaded(.failure(error)))
            }
        }
        let watcher = Task {
            if await self.leaseVoided(request, stoppingWhenTakenOver: stoppingWhenTakenOver) { end.offer(.voided) }
        }
        let outcome = await withTaskCancellationHandler {
            await end.value()
        } onCancel: {
            loader.cancel()
            end.offer(.loaded(.failure(CancellationError())))
        }
        loader.cancel()
        watcher.cancel()
        // The watch holds the store: it ends (at once, cancelled) before the load returns, so that a store whose last
        // reference the caller drops next closes there and then. An open right after found it still open now and
        // then (`aStoreReopensAtOnceWhateverItsLastCall`, under a full pool).
        await watcher.value
        // A write that committed before a failure, which the watch had not heard of yet, wins all the same
        // (review-86 #3).
        if case .loaded(.failure) = outcome, leaseStanding(request).isVoid(stoppingWhenTakenOver) { return .voided }
        return outcome
    }

    /// Waits until a write of the request's id voids its lease, and returns true then; false when the task is
    /// cancelled first (the load ended), or when the lease stands otherwise (see ``leaseStanding(_:)``: the
    /// load's outcome decides). The lease is read once the watch listens, so that a write between the lease's
    /// commit and the watch counts.
    private func leaseVoided<T: LocalStorable>(_ request: LeasedLoad<T>, stoppingWhenTakenOver: Bool) async -> Bool {
        // The load may have ended before this task started: no watch to set up and take down (review-90 R3).
        guard !Task.isCancelled else { return false }
        let watch = RecordWatch(core: core, typeName: request.schema.name, id: request.name)
        defer { watch.end() }
        while !Task.isCancelled {
            let standing = leaseStanding(request)
            guard standing == .held else { return standing.isVoid(stoppingWhenTakenOver) }
            await watch.waitForChange()
        }
        return false
    }

    /// How a load's lease in this store stands.
    private enum LeaseStanding {
        /// Still the load's own.
        case held
        /// A write of the id voided it: no entry, or a marker, where the lease was.
        case voided
        /// Another caller's load took the id over since (a write voided this one first, or its deadline passed:
        /// review-86 #4): this load's result could not be stored, and the flight waits on that load instead (trial105
        /// D3: both loaded at once).
        case takenOver
        /// It could not be read (logged): the load's outcome decides.
        case unknown

        /// Whether the load stops here (a takeover only when `stoppingWhenTakenOver`).
        func isVoid(_ stoppingWhenTakenOver: Bool) -> Bool {
            self == .voided || (self == .takenOver && stoppingWhenTakenOver)
        }
    }

    /// How the request's lease in this store stands now.
    private func leaseStanding<T: LocalStorable>(_ request: LeasedLoad<T>) -> LeaseStanding {
        do {
            let leases = try store.leaseBook()
            let entry = try core.environment.read { txn in try leases.entry(request.leaseKey, txn: txn) }
            guard let entry, entry.kind == .lease else { return .voided }
            return entry.token == request.token ? .held : .takenOver
        } catch {
            store.logger?.log(
                level: .warning, message: "Could not read a load's lease; the load's outcome decides",
                metadata: ["type": request.schema.name, "error": "\(LocalStorageError.wrapping(error))"])
            return .unknown
        }
    }

    /// Stores what the request's `load` returned while its lease holds; returns whether it did (a write of the
    /// id voided the lease meanwhile: that write wins).
    private func storeLoaded<T: LocalStorable>(_ value: T, for request: LeasedLoad<T>) async throws -> Bool {
        let record = try prepare(value, for: request)
        let leases = try store.leaseBook()
        let (leaseKey, token, key, schema) = (request.leaseKey, request.token, request.key, request.schema)
        let expiration = request.policy.expiration
        let core = self.core
        return try await core.writer.perform { context -> Bool in
            guard try leases.holds(leaseKey, token: token, key: key, type: schema.number, context: context) else {
                core.unstoredLoads.add(1, ordering: .relaxed)
                return false
            }
            // The insert or update this logs voids the lease at commit (see ``LeaseBook/void(_:txn:)``).
            try RecordWriter.put(
                record, expiresAt: expiration.expiresAt(now: context.now), schema: schema, context: context)
            return true
        }
    }

    /// Encodes what the request's `load` returned, in the store's codec.
    ///
    /// - Throws: `invalidId` when the value's id is not the one asked for.
    func prepare<T: LocalStorable>(_ value: T, for request: LeasedLoad<T>) throws -> PreparedRecord {
        // By bytes, as the store keys records: a canonically equivalent id in another normalization is another
        // record, which this load's lease does not cover (trial87 #4: it was stored there, and the id asked for
        // kept its lease until the timeout and loaded again at every call).
        let returned = try value.storageID()
        guard returned.utf8.elementsEqual(request.name.utf8) else {
            let same =
                returned == request.name
                ? " (the same text in another Unicode normalization; ids compare by bytes)" : ""
            throw LocalStorageError.invalidId(
                "load returned \(T.self) \"\(returned)\" for the id \"\(request.name)\"\(same)")
        }
        return try PreparedRecord(encoding: value, schema: request.schema, format: store.format, indexValues: nil)
    }

    /// Records that the request's load found nothing: a nil remembered for `policy.absentFor` (or only for
    /// the callers that waited on this load), no later than `until` (ns since 1970: another instance's nil, which
    /// this store's must not outlive), or, for a refresh (`refreshing`), the stale record deleted.
    func rememberAbsence<T: LocalStorable>(
        _ request: LeasedLoad<T>, refreshing: Bool, until: Int64 = .max
    ) async throws {
        let leases = try store.leaseBook()
        let clock = core.clock
        let (leaseKey, token, key, name, schema) = (
            request.leaseKey, request.token, request.key, request.name, request.schema
        )
        let absentFor = request.policy.absentFor
        try await core.writer.perform { context in
            guard try leases.holds(leaseKey, token: token, key: key, type: schema.number, context: context) else {
                return
            }
            if refreshing {
                // The source has it no more: the record goes; without `absentFor` its delete voids the lease,
                // with it the lease becomes the remembered nil below.
                let deleted = try RecordWriter.delete(
                    id: name, key: key, schema: schema, context: context, keepsLease: absentFor != nil)
                if deleted && absentFor == nil { return }
            }
            let now = clock.leaseMoment()
            let deadline = min(absentFor.map { now.wall.advanced(saturatingBy: $0) } ?? now.wall, max(now.wall, until))
            let marker = LeaseEntry(
                kind: .absent, token: token, now: now, left: .nanoseconds(deadline.subtracting(saturating: now.wall)))
            try leases.put(marker, key: leaseKey, context: context)
            try leases.sweep(now: now, txn: context.txn)
            // Wakes the callers other processes have waiting on this load (no record changed).
            context.log(schema, .touched, id: key)
        }
    }

    /// Gives back the lease `token` holds after a failed load, so that another caller may load; a failure
    /// to do so is logged (the lease then ends at its deadline).
    func giveBack(_ leaseKey: [UInt8], token: UInt64, key: [UInt8], schema: TypeSchema) async {
        do {
            let leases = try store.leaseBook()
            try await core.writer.perform { context in
                guard let entry = try leases.entry(leaseKey, txn: context.txn), entry.kind == .lease,
                    entry.token == token
                else { return }
                try leases.remove(leaseKey, txn: context.txn)
                context.log(schema, .touched, id: key)
            }
        } catch {
            store.logger?.log(
                level: .warning, message: "Could not give back a load's lease; it ends at its deadline",
                metadata: ["type": schema.name, "error": "\(LocalStorageError.wrapping(error))"])
        }
    }
}

extension LeaseBook {
    /// Whether the lease on `leaseKey` is still the one `token` took: its deadline has not passed (a load given
    /// up after `loadTimeout` stores nothing when it ends later), and no write of the id (or clear of its type)
    /// voided it, neither in an earlier commit nor earlier in this one.
    func holds(
        _ leaseKey: [UInt8], token: UInt64, key: [UInt8], type: UInt32, context: CommitQueue.Context
    ) throws -> Bool {
        guard let entry = try entry(leaseKey, txn: context.txn), entry.kind == .lease, entry.token == token,
            entry.holds(at: context.leaseNow)
        else {
            return false
        }
        return !context.logged.contains { change in
            guard change.type == type else { return false }
            switch change.kind {
            case .cleared: return true
            case .inserted, .updated, .deleted: return change.id == key
            case .expired, .touched: return false
            }
        }
    }
}
