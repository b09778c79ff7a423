/// Loading through the cache with a shared tier: one load per id among every instance on the namespace.
/// The caller already holds this store's lease (so one process of the store goes on to the server); here it
/// takes the lease on the server too (``SharedTier/acquireLease(type:id:token:timeout:condition:)``), or
/// waits for the instance holding it: that instance's record write (or the `L` notice of a load that failed
/// or found nothing) reaches this store through the shared tier's change channel and wakes the caller, and
/// the server's `PX` ends the lease of a holder that died. Waiting runs on the store's clock.
extension LocalStorage {
    /// Loads the record once across the instances on the shared tier, under this store's lease
    /// (`leaseKey`, `token`), which it gives back (or which the record's commit voids) before returning.
    func loadShared<T: LocalStorable>(
        _ type: T.Type, id: T.ID, name: String, key: [UInt8], leaseKey: [UInt8], token: UInt64,
        schema: TypeSchema, policy: LoadPolicy, refreshing: Int64?, tier: SharedTier,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        let watch = RecordWatch(core: core, typeName: schema.name, id: name)
        defer { watch.end() }
        var awaited: UInt64?
        var condition: SharedTier.LeaseCondition = refreshing.map { .refreshing($0) } ?? .noRecord
        while true {
            let attempt: SharedTier.LeaseAttempt
            do {
                try Task.checkCancellation()
                attempt = try await tier.acquireLease(
                    type: schema.name, id: key, token: token, timeout: policy.loadTimeout, condition: condition)
            } catch {
                await giveBack(leaseKey, token: token, key: key, schema: schema)
                throw error
            }
            switch attempt {
            case .acquired:
                return try await loadUnderSharedLease(
                    T.self, id: id, name: name, key: key, leaseKey: leaseKey, token: token, schema: schema,
                    policy: policy, refreshing: refreshing, tier: tier, load: load)
            case .recordExists:
                // Another instance wrote the record: this store has it (or gets it from the server).
                let found: T?
                do {
                    found =
                        refreshing == nil
                        ? try await fetch(T.self, id: name)
                        : try await look(T.self, id: name, key: key, schema: schema).value
                } catch {
                    await giveBack(leaseKey, token: token, key: key, schema: schema)
                    throw error
                }
                if let found {
                    await giveBack(leaseKey, token: token, key: key, schema: schema)
                    return found
                }
                // The server's record is not live for this store's clock: load whatever the server holds.
                condition = .any
            case .held(_, .zero?):
                continue  // It ended between the two reads.
            case .held(let holder?, let remaining):
                let now = core.clock.wallNanoseconds()
                if holder.kind == .absent {
                    if (refreshing == nil && holder.remembersAbsence(at: now)) || holder.token == awaited {
                        await giveBack(leaseKey, token: token, key: key, schema: schema)
                        return nil
                    }
                    // A nil no longer remembered: out of the way (unless something replaced it meanwhile).
                    try await tier.settleLease(type: schema.name, id: name, expected: holder, announce: false)
                    continue
                }
                awaited = holder.token
                await watch.wait(for: remaining ?? policy.loadTimeout)
            case .held(nil, let remaining):
                // A value this version cannot read: taken for a lease until it ends.
                await watch.wait(for: remaining ?? policy.loadTimeout)
            }
        }
    }

    /// Runs `load` under the server's lease (taken under `token`) and writes its result while that lease still
    /// holds (``SharedTierScripts/leasedPut``); a nil is remembered on the server (``SharedTierLease``) and
    /// in this store. Returns the loaded value, or, when a write of the id voided the lease meanwhile, what
    /// the store holds after that write.
    ///
    /// - Throws: the loader's own error as a ``CallerError`` (both leases are given back first).
    private func loadUnderSharedLease<T: LocalStorable>(
        _ type: T.Type, id: T.ID, name: String, key: [UInt8], leaseKey: [UInt8], token: UInt64,
        schema: TypeSchema, policy: LoadPolicy, refreshing: Int64?, tier: SharedTier,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        let lease = SharedTierLease(kind: .lease, token: token)
        let loaded: T?
        do {
            loaded = try await load(id)
        } catch {
            await endSharedLease(lease, name: name, key: key, leaseKey: leaseKey, schema: schema, tier: tier)
            throw CallerError(underlying: error)
        }
        do {
            guard let value = loaded else {
                return try await rememberSharedAbsence(
                    T.self, name: name, key: key, leaseKey: leaseKey, lease: lease, schema: schema, policy: policy,
                    refreshing: refreshing, tier: tier)
            }
            guard try value.storageID() == name else {
                throw LocalStorageError.invalidId(
                    "load returned \(T.self) \"\(try value.storageID())\" for the id \"\(name)\"")
            }
            let record = try prepare(value, schema: schema)
            let now = core.clock.wallNanoseconds()
            let put = try tier.put(
                record, expiresAt: try policy.expiration.expiresAt(now: now), now: now, schema: schema)
            do {
                let written = try await tier.write(
                    [put], schema: schema, now: now,
                    lease: (tier.leaseKey(type: schema.name, id: key), lease.bytes))
                // The record's local commit voids this store's lease too.
                try await tier.commitOwn(written, records: [record], schema: schema)
            } catch is SharedTierLeaseLost {
                // A write of the id by some instance came first: it wins.
                await giveBack(leaseKey, token: token, key: key, schema: schema)
                return try await fetch(T.self, id: name)
            }
            await giveBack(leaseKey, token: token, key: key, schema: schema)
            return value
        } catch {
            await endSharedLease(lease, name: name, key: key, leaseKey: leaseKey, schema: schema, tier: tier)
            throw error
        }
    }

    /// The load under `lease` found nothing: the nil is remembered on the server for `policy.absentFor` (and
    /// long enough for the callers waiting on it to see it) and in this store; a refreshed record is deleted.
    /// When a write voided the lease meanwhile, returns what the store holds after it.
    private func rememberSharedAbsence<T: LocalStorable>(
        _ type: T.Type, name: String, key: [UInt8], leaseKey: [UInt8], lease: SharedTierLease, schema: TypeSchema,
        policy: LoadPolicy, refreshing: Int64?, tier: SharedTier
    ) async throws -> T? {
        if refreshing != nil {
            // The source has it no more: the stale record goes, unless a write overtook the refresh.
            if try await tier.settleLease(type: schema.name, id: name, expected: lease, announce: false) {
                try await delete(T.self, id: name)
            }
            await giveBack(leaseKey, token: lease.token, key: key, schema: schema)
            return try await fetch(T.self, id: name)
        }
        let now = core.clock.wallNanoseconds()
        let marker = SharedTierLease(
            kind: .absent, token: lease.token, rememberUntil: policy.absentFor.map { now &+ $0.nanoseconds } ?? now)
        let kept = try await tier.settleLease(
            type: schema.name, id: name, expected: lease, replacement: marker,
            keepFor: max(policy.absentFor ?? .zero, policy.loadTimeout), announce: true)
        guard kept else {
            await giveBack(leaseKey, token: lease.token, key: key, schema: schema)
            return try await fetch(T.self, id: name)
        }
        try await rememberAbsence(
            leaseKey, token: lease.token, key: key, name: name, schema: schema, policy: policy, refreshing: nil)
        return nil
    }

    /// Gives back both leases after a failed load: the server's (waking the other instances' callers) and
    /// this store's. A failure to end the server's is logged; it then ends at its `PX`.
    private func endSharedLease(
        _ lease: SharedTierLease, name: String, key: [UInt8], leaseKey: [UInt8], schema: TypeSchema, tier: SharedTier
    ) async {
        do {
            try await tier.settleLease(type: schema.name, id: name, expected: lease, announce: true)
        } catch {
            logger?.log(
                level: .warning,
                message: "Could not give back a load's lease on the shared tier; it ends at its timeout",
                metadata: ["type": schema.name, "error": "\(LocalStorageError.wrapping(error))"])
        }
        await giveBack(leaseKey, token: lease.token, key: key, schema: schema)
    }
}
