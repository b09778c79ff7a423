/// Loading through the cache with a shared tier: one load per id among every instance on the namespace.
/// The caller already holds this store's lease (so one process of the store goes on to the server); here it
/// takes the lease on the server too (``SharedTier/acquireLease(type:id:token:timeout:condition:)``), or
/// waits for the instance holding it: that instance's record write (or the `L` notice of a load that failed
/// or found nothing) reaches this store through the shared tier's change channel and wakes the caller, and
/// the server's `PX` ends the lease of a holder that died. Waiting runs on the store's clock.
extension SharedTierRecordStore: LoadCoordinator {
    /// A load through the cache: ``LoadThrough``, with this tier taking part.
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, id: T.ID, policy: LoadPolicy, schema: TypeSchema,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        try await LoadThrough(store: local, coordinator: self).fetch(
            T.self, id: id, policy: policy, schema: schema, load: load)
    }

    nonisolated(nonsending) func fetchBeforeLoading<T: LocalStorable>(
        _ type: T.Type, id: String, schema: TypeSchema
    ) async throws -> T? {
        try await fetch(T.self, id: id, schema: schema)
    }

    /// Loads the record once across the instances on the shared tier, under this store's lease, which it
    /// gives back (or which the record's commit voids) before returning.
    func load<T: LocalStorable>(_ request: LeasedLoad<T>) async throws -> T? {
        let (name, key, schema) = (request.name, request.key, request.schema)
        let watch = RecordWatch(core: core, typeName: schema.name, id: name)
        defer { watch.end() }
        var awaited: UInt64?
        var condition: SharedTier.LeaseCondition =
            request.refreshing.map { .refreshing(updatedAt: $0.updatedAt, expiresAt: $0.expiresAt) } ?? .noRecord
        while true {
            let attempt: SharedTier.LeaseAttempt
            do {
                try Task.checkCancellation()
                attempt = try await tier.acquireLease(
                    type: schema.name, id: key, token: request.token, timeout: request.policy.loadTimeout,
                    condition: condition)
            } catch {
                if RESPConnection.mayHaveBeenApplied(error) { giveBackAbandonedLease(request) }
                await request.giveBack()
                throw error
            }
            switch attempt {
            case .acquired:
                return try await loadUnderSharedLease(request)
            case .recordExists:
                // Another instance wrote the record: this store has it (or gets it from the server).
                let found: T?
                do {
                    found =
                        request.refreshing == nil
                        ? try await fetch(T.self, id: name, schema: schema)
                        : try await local.look(T.self, id: name, key: key, schema: schema).value
                } catch {
                    await request.giveBack()
                    throw error
                }
                if let found {
                    await request.giveBack()
                    return found
                }
                if request.refreshing != nil {
                    // The record the refresh served is gone here too (deleted, or expired): nothing to refresh.
                    await request.giveBack()
                    throw RefreshOvertaken()
                }
                // The server's record is not live for this store's clock: load whatever the server holds (a marker
                // of the load this caller waited on answers no more: it decided to load).
                condition = .any
                awaited = nil
            case .held(_, .zero?):
                continue  // It ended between the two reads.
            case .held(let holder?, let remaining):
                let now = core.clock.wallNanoseconds()
                if holder.kind == .absent {
                    if (request.refreshing == nil && holder.remembersAbsence(at: now)) || holder.token == awaited {
                        if request.refreshing != nil {
                            await request.giveBack()
                            return nil
                        }
                        // The nil answers the processes on this store waiting on this one's lease too: it stays as
                        // this lease's remembered nil (review-107 A1: given back, they found no entry and loaded), for
                        // no longer than the server remembers it (only for those waiters when it remembers it no more).
                        let until = holder.remembersAbsence(at: now) ? holder.rememberUntil : now
                        do {
                            try await request.through.rememberAbsence(request, refreshing: false, until: until)
                        } catch {
                            local.logger?.log(
                                level: .warning,
                                message: "Could not remember another instance's nil here; waiters on this store load",
                                metadata: ["type": schema.name, "error": "\(LocalStorageError.wrapping(error))"])
                            await request.giveBack()
                            return nil
                        }
                        // A write of the id that voided the lease meanwhile wins: the callers get what it left.
                        return try await local.look(T.self, id: name, key: key, schema: schema).value
                    }
                    // A nil no longer remembered: out of the way (unless something replaced it meanwhile).
                    do {
                        try await tier.settleLease(type: schema.name, id: name, expected: holder, announce: false)
                    } catch {
                        await request.giveBack()
                        throw error
                    }
                    continue
                }
                if awaited != holder.token { core.leaseWaits.add(1, ordering: .relaxed) }
                awaited = holder.token
                await watch.wait(for: remaining ?? request.policy.loadTimeout)
            case .held(nil, let remaining):
                // A value this version cannot read: taken for a lease until it ends.
                await watch.wait(for: remaining ?? request.policy.loadTimeout)
            }
        }
    }

    /// Runs `load` under the server's lease (taken under the request's token) and writes its result while
    /// that lease still holds (``SharedTierScripts/leasedPut``); a nil is remembered on the server
    /// (``SharedTierLease``) and in this store. Returns the loaded value, or, when a write of the id voided
    /// the lease meanwhile, what the store holds after that write.
    ///
    /// - Throws: the loader's own error as a ``CallerError`` (both leases are given back first).
    private func loadUnderSharedLease<T: LocalStorable>(_ request: LeasedLoad<T>) async throws -> T? {
        let (name, key, schema) = (request.name, request.key, request.schema)
        let lease = SharedTierLease(kind: .lease, token: request.token)
        if Task.isCancelled {
            // The flight was given up while the lease was being taken: the source is not asked.
            await endSharedLease(lease, request: request)
            throw CancellationError()
        }
        let loaded: T?
        switch await request.through.loadUnlessVoided(request, stoppingWhenTakenOver: false) {
        case .voided:
            // A write of the id reached this store while the load ran: it wins, and the callers get it at once.
            await endSharedLease(lease, request: request)
            return try await fetch(T.self, id: name, schema: schema)
        case .loaded(.failure(let error)):
            await endSharedLease(lease, request: request)
            throw CallerError(underlying: error)
        case .loaded(.success(let value)):
            loaded = value
        }
        if Task.isCancelled {
            // The flight was given up at its timeout (its callers got `loadTimedOut`) and the loader returned as it
            // was cancelled, while the server's lease, taken a little later, still held: a late result is not
            // stored (trial87 #2: it was, on every instance; this store's lease had already ended).
            await endSharedLease(lease, request: request)
            throw CancellationError()
        }
        do {
            guard let value = loaded else {
                return try await rememberSharedAbsence(request, lease: lease)
            }
            let record = try request.through.prepare(value, for: request)
            let now = tier.nextWriteTime()
            let put = try tier.put(
                record, expiresAt: try request.policy.expiration.expiresAt(now: now), now: now, schema: schema)
            do {
                let written = try await tier.write(
                    [put], schema: schema, now: now,
                    lease: (tier.leaseKey(type: schema.name, id: key), lease.bytes))
                // The record's local commit voids this store's lease too.
                try await tier.commitOwn(written, records: [record], schema: schema)
            } catch let lost as SharedTierLeaseLost {
                // A write of the id by some instance came first: it wins.
                await request.giveBack()
                let current = try await fetch(T.self, id: name, schema: schema)
                // Unless the server lost its data, the lease with it, and holds no record: the source's value is the
                // answer, not stored (trial91 #2: the callers got nil).
                if current == nil, lost.gone { return value }
                return current
            }
            await request.giveBack()
            return value
        } catch {
            await endSharedLease(lease, request: request)
            throw error
        }
    }

    /// The load under `lease` found nothing: the nil is remembered on the server for `policy.absentFor` (and
    /// long enough for the callers waiting on it to see it) and in this store; a refreshed record is deleted.
    /// When a write voided the lease meanwhile, returns what the store holds after it.
    private func rememberSharedAbsence<T: LocalStorable>(
        _ request: LeasedLoad<T>, lease: SharedTierLease
    ) async throws -> T? {
        let (name, key, schema, policy) = (request.name, request.key, request.schema, request.policy)
        if request.refreshing != nil {
            // The source has it no more: the stale record goes, unless a write overtook the refresh (checked and
            // deleted in one script: a write between a check and the delete would go with it).
            do {
                let sequence = try await tier.delete(
                    id: name, schema: schema, lease: (tier.leaseKey(type: schema.name, id: key), lease.bytes))
                try await commitOwnDeletes([sequence], ids: [name], keys: [key], schema: schema)
            } catch is SharedTierLeaseLost {
                // The write wins; this store has it (or will, from its notice).
            }
            await request.giveBack()
            return try await fetch(T.self, id: name, schema: schema)
        }
        let now = core.clock.wallNanoseconds()
        let marker = SharedTierLease(
            kind: .absent, token: lease.token,
            rememberUntil: policy.absentFor.map { now.advanced(saturatingBy: $0) } ?? now)
        let kept = try await tier.settleLease(
            type: schema.name, id: name, expected: lease, replacement: marker,
            keepFor: max(policy.absentFor ?? .zero, policy.loadTimeout), announce: true)
        guard kept else {
            await request.giveBack()
            return try await fetch(T.self, id: name, schema: schema)
        }
        try await request.through.rememberAbsence(request, refreshing: false)
        return nil
    }

    /// Gives back, in a task of its own, the server's lease a request may have taken although its caller learnt
    /// nothing: the caller stopped waiting (the load was given up at its `loadTimeout`: review-78 #3) or the reply
    /// did not come within `readTimeout`. The script runs all the same, and every other caller of the id would
    /// wait for `loadTimeout`. A lease under another token stays. After a cancellation the give-back follows the
    /// request on the same connection, so it finds the lease taken or never taken; after a read timeout the
    /// connection was dropped and the give-back goes on a new one, which the network may deliver first: then it
    /// marks the request abandoned, and the request takes no lease when it arrives (review-79).
    private func giveBackAbandonedLease<T: LocalStorable>(_ request: LeasedLoad<T>) {
        let (tier, logger) = (tier, local.logger)
        let (type, id, token) = (request.schema.name, request.name, request.token)
        let keepFor = request.policy.loadTimeout + tier.endpoint.readTimeout
        keepGivingBack("the lease an abandoned load request may hold", type: type) {
            if try await tier.abandonLease(type: type, id: id, token: token, keepFor: keepFor) {
                logger?.log(
                    level: .info, message: "Gave back the lease an abandoned load request took on the shared tier",
                    metadata: ["type": type])
            }
        }
    }

    /// Runs `giveBack` in a task of its own until it does not throw: at once (unless `tried`: the caller did),
    /// then 0.1 s later and twice as late each time up to 5 s, twenty tries in all (about 75 s), until the store
    /// closes; logs the last failure, after which the lease ends at its `PX`. A server that stalled or could not
    /// be reached for longer than one try waited for otherwise kept the lease for `loadTimeout` (trial79).
    private func keepGivingBack(
        _ what: String, type: String, tried: Bool = false, _ giveBack: @escaping @Sendable () async throws -> Void
    ) {
        let (tier, logger) = (tier, local.logger)
        Task {
            var delay = Duration.milliseconds(100)
            for attempt in 1...Self.giveBackAttempts {
                if attempt > 1 || tried {
                    do {
                        try await tier.clock.sleep(for: delay)
                    } catch {
                        return  // Cancelled: nothing cancels this task but the process's end.
                    }
                    delay = min(delay * 2, .seconds(5))
                }
                do {
                    try await giveBack()
                    return
                } catch {
                    guard attempt < Self.giveBackAttempts, !tier.state.withLock({ $0.isStopped }) else {
                        logger?.log(
                            level: .warning,
                            message: "Could not give back \(what) on the shared tier; it ends at its timeout",
                            metadata: ["type": type, "error": "\(LocalStorageError.wrapping(error))"])
                        return
                    }
                }
            }
        }
    }

    /// How many times ``keepGivingBack(_:type:tried:_:)`` tries.
    private static var giveBackAttempts: Int { 20 }

    /// Gives back both leases after a failed load: the server's (waking the other instances' callers) and
    /// this store's. A failure to end the server's is tried again behind the caller
    /// (``keepGivingBack(_:type:tried:_:)``).
    private func endSharedLease<T: LocalStorable>(_ lease: SharedTierLease, request: LeasedLoad<T>) async {
        let (tier, type, id) = (tier, request.schema.name, request.name)
        let settle: @Sendable () async throws -> Void = {
            try await tier.settleLease(type: type, id: id, expected: lease, announce: true)
        }
        do {
            try await settle()
        } catch {
            // Tried again behind the caller, who learns of the load's failure now.
            keepGivingBack("a load's lease", type: type, tried: true, settle)
        }
        await request.giveBack()
    }
}
