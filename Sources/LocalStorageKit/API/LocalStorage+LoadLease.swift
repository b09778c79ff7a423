/// The lease steps of a load through the cache, each one commit of the writer: take the lease, store
/// the loaded record while the lease holds (compare-and-set on the lease's token), remember a nil, give
/// the lease back after a failure.
extension LocalStorage {
    /// Takes the lease on `leaseKey` under `token` unless the record is live (and not the one being
    /// refreshed) or another live lease holds it; returns whether it did.
    func takeLease(
        _ leaseKey: [UInt8], token: UInt64, refreshing: Int64?, key: [UInt8], schema: TypeSchema,
        timeout: Duration
    ) async throws -> Bool {
        let leases = try leaseBook()
        let clock = core.clock
        return try await core.writer.perform { context in
            let txn = context.txn
            if let bytes = try txn.get(schema.records, key: key) {
                let view = try RecordView(fixedPartOf: bytes)
                if !view.isExpired(at: context.now), refreshing == nil || view.updatedAt != refreshing { return false }
            }
            let now = clock.wallNanoseconds()
            if let entry = try leases.entry(leaseKey, txn: txn), entry.holds(at: now) { return false }
            let lease = LeaseEntry(
                kind: .lease, owner: .current, token: token, deadline: now &+ timeout.nanoseconds)
            try leases.put(lease, key: leaseKey, txn: txn)
            return true
        }
    }

    /// Runs `load` under the lease `token` holds and stores what it returns while the lease still holds.
    /// Returns the loaded value, or, when a write of the id voided the lease meanwhile, what the store
    /// holds after that write.
    ///
    /// - Throws: the loader's own error as a ``CallerError`` (the lease is given back first).
    func runLoad<T: LocalStorable>(
        _ type: T.Type, id: T.ID, name: String, key: [UInt8], leaseKey: [UInt8], token: UInt64,
        schema: TypeSchema, policy: LoadPolicy, refreshing: Int64?, load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        let loaded: T?
        do {
            loaded = try await load(id)
        } catch {
            await giveBack(leaseKey, token: token, key: key, schema: schema)
            throw CallerError(underlying: error)
        }
        guard let value = loaded else {
            try await rememberAbsence(
                leaseKey, token: token, key: key, name: name, schema: schema, policy: policy, refreshing: refreshing)
            return try await look(T.self, id: name, key: key, schema: schema).value
        }
        let record: PreparedRecord
        do {
            guard try value.storageID() == name else {
                throw LocalStorageError.invalidId(
                    "load returned \(T.self) \"\(try value.storageID())\" for the id \"\(name)\"")
            }
            record = try prepare(value, schema: schema)
            if try await tiers.saveLoaded(record, expiration: policy.expiration, schema: schema) {
                await giveBack(leaseKey, token: token, key: key, schema: schema)
                return value
            }
        } catch {
            await giveBack(leaseKey, token: token, key: key, schema: schema)
            throw error
        }
        let leases = try leaseBook()
        let expiration = policy.expiration
        let stored = try await core.writer.perform { context -> Bool in
            guard try leases.holds(leaseKey, token: token, key: key, type: schema.number, context: context) else {
                return false
            }
            // The insert or update this logs voids the lease at commit (see ``LeaseBook/void(_:txn:)``).
            try RecordWriter.put(
                record, expiresAt: expiration.expiresAt(now: context.now), schema: schema, context: context)
            return true
        }
        if stored { return value }
        return try await look(T.self, id: name, key: key, schema: schema).value
    }

    /// Records that the load under `token` found nothing: a nil remembered for `policy.absentFor` (or
    /// only for the callers that waited on this load), or, for a refresh, the stale record deleted.
    func rememberAbsence(
        _ leaseKey: [UInt8], token: UInt64, key: [UInt8], name: String, schema: TypeSchema, policy: LoadPolicy,
        refreshing: Int64?
    ) async throws {
        let leases = try leaseBook()
        let clock = core.clock
        let absentFor = policy.absentFor
        try await core.writer.perform { context in
            guard try leases.holds(leaseKey, token: token, key: key, type: schema.number, context: context) else {
                return
            }
            if refreshing != nil, try RecordWriter.delete(id: name, key: key, schema: schema, context: context) {
                return  // The source has it no more: the delete voids the lease.
            }
            let now = clock.wallNanoseconds()
            let marker = LeaseEntry(
                kind: .absent, owner: .current, token: token, deadline: absentFor.map { now &+ $0.nanoseconds } ?? now)
            try leases.put(marker, key: leaseKey, txn: context.txn)
            // Wakes the callers other processes have waiting on this load (no record changed).
            context.log(schema, .touched, id: key)
        }
    }

    /// Gives back the lease `token` holds after a failed load, so that another caller may load; a failure
    /// to do so is logged (the lease then ends at its deadline).
    func giveBack(_ leaseKey: [UInt8], token: UInt64, key: [UInt8], schema: TypeSchema) async {
        do {
            let leases = try leaseBook()
            try await core.writer.perform { context in
                guard let entry = try leases.entry(leaseKey, txn: context.txn), entry.kind == .lease,
                    entry.token == token
                else { return }
                try leases.remove(leaseKey, txn: context.txn)
                context.log(schema, .touched, id: key)
            }
        } catch {
            logger?.log(
                level: .warning, message: "Could not give back a load's lease; it ends at its deadline",
                metadata: ["type": schema.name, "error": "\(LocalStorageError.wrapping(error))"])
        }
    }

    func leaseBook() throws(LocalStorageError) -> LeaseBook {
        guard let leases = core.changeLog.leases else {
            throw .storageError(code: -1, message: "the store has no lease database")
        }
        return leases
    }
}

extension LeaseBook {
    /// Whether the lease on `leaseKey` is still the one `token` took: no write of the id (or clear of its
    /// type) voided it, neither in an earlier commit nor earlier in this one.
    func holds(
        _ leaseKey: [UInt8], token: UInt64, key: [UInt8], type: UInt32, context: CommitQueue.Context
    ) throws -> Bool {
        guard let entry = try entry(leaseKey, txn: context.txn), entry.kind == .lease, entry.token == token else {
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
