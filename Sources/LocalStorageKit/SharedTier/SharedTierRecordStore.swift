import Synchronization

/// The shared tier layered over the store's other tiers (``RecordStore``): writes go to the server first,
/// then commit locally with the very bytes the server holds; reads wait until local records may be served
/// (``SharedTier/awaitSettled()``), are served by the tiers below, and fill a local miss from the server.
struct SharedTierRecordStore: RecordStore {
    /// The tiers below: the memory tier over the local store, or the local store.
    let base: any RecordStore
    let local: LocalRecordStore
    let tier: SharedTier

    /// Why `write { }` throws on a store with a shared tier: its body runs inside a local transaction, which
    /// cannot wait for the server.
    static let writeTransactionsNotShared =
        "write { } transactions do not reach the shared tier; use save, "
        + "save(contentsOf:), delete, deleteAll, setExpiration or update, which do"

    /// Why `read { }` throws on a store with a shared tier: its snapshot is this instance's near cache, where a
    /// record the server holds may be missing (a false nil) and a query would miss the server's rows.
    static let readTransactionsNotShared =
        "read { } transactions do not reach the shared tier (a snapshot of this instance's near cache would "
        + "answer nil for records only the server holds); use fetch, fetch(_:ids:), queries, counts and pages, "
        + "which do"

    var core: StoreCore { local.core }

    nonisolated(nonsending) func settle() async throws { try await tier.awaitSettled() }

    func close() {
        tier.stop()
        base.close()
    }

    // MARK: - Writes

    nonisolated(nonsending) func save(
        _ record: PreparedRecord, expiration: CacheExpiration, schema: TypeSchema
    ) async throws {
        try await save(contentsOf: [record], expiration: expiration, schema: schema)
    }

    /// Writes records on the shared tier, then commits them locally with the server's bytes.
    nonisolated(nonsending) func save(
        contentsOf records: [PreparedRecord], expiration: CacheExpiration, schema: TypeSchema
    ) async throws {
        let now = tier.nextWriteTime()
        let expiresAt = try expiration.expiresAt(now: now)
        let puts = try records.map { try tier.put($0, expiresAt: expiresAt, now: now, schema: schema) }
        let written = try await tier.write(puts, schema: schema, now: now)
        try await tier.commitOwn(written, records: records, schema: schema)
    }

    /// Deletes a record on the shared tier, then locally.
    nonisolated(nonsending) func delete(id: String, key: [UInt8], schema: TypeSchema) async throws {
        try await delete(ids: [id], keys: [key], schema: schema)
    }

    /// Deletes records on the shared tier in one script, then locally in one commit (each unless the applier
    /// already holds its deletion or something later), then waits for those not admitted.
    nonisolated(nonsending) private func delete(ids: [String], keys: [[UInt8]], schema: TypeSchema) async throws {
        let sequences = try await tier.delete(ids: ids, schema: schema)
        try await commitOwnDeletes(sequences, ids: ids, keys: keys, schema: schema)
    }

    /// Deletes locally, in one commit, records this instance deleted on the server at `sequences` (each unless
    /// the applier already holds its deletion or something later), then waits for those not admitted.
    nonisolated(nonsending) func commitOwnDeletes(
        _ sequences: [Int64], ids: [String], keys: [[UInt8]], schema: TypeSchema
    ) async throws {
        let tier = self.tier
        // The notes of admitted deletes go with a transaction that does not commit
        // (``SharedTier/keepRollbackPoint(in:)``).
        let waiting = try await core.writer.perform { context -> [Int64] in
            var waiting: [Int64] = []
            for (position, sequence) in sequences.enumerated() {
                if tier.admitsOwn(sequence, type: schema.name, id: ids[position], context: context) != nil {
                    try RecordWriter.delete(
                        id: ids[position], key: keys[position], schema: schema, context: context)
                } else {
                    waiting.append(sequence)
                }
            }
            return waiting
        }
        if let last = waiting.max() { await tier.awaitApplied(last) }
    }

    /// Deletes every record of a type on the shared tier, then locally.
    nonisolated(nonsending) func deleteAll(schema: TypeSchema) async throws {
        let sequence = try await tier.clear(schema: schema)
        let tier = self.tier
        let admitted = try await core.writer.perform { context -> Bool in
            guard tier.admitsOwnClear(sequence, type: schema.name, context: context) else { return false }
            try RecordWriter.clear(schema: schema, context: context)
            return true
        }
        if !admitted { await tier.awaitApplied(sequence) }
    }

    /// Deletes the matching records on the shared tier in one script (the query runs on the server), then
    /// locally in one commit; `locally` is not run.
    nonisolated(nonsending) func delete<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], schema: TypeSchema,
        locally: () async throws -> Int
    ) async throws -> Int {
        let plan = try QueryPlan(filters: filters, sort: nil, schema: schema)
        let doomed = try await SharedTierQuery(tier: tier, schema: schema, plan: plan)
            .fetch(
                T.self, options: try FetchOptions(scope: .shared).validated(),
                session: local.makeDecodeSession(for: schema))
        let ids = try doomed.map { try $0.storageID() }
        guard !ids.isEmpty else { return 0 }
        try await delete(ids: ids, keys: try ids.map { try RecordWriter.key(for: $0) }, schema: schema)
        return ids.count
    }

    /// Changes a record's time to live on the shared tier (re-reading and retrying when another instance
    /// writes it meanwhile), then locally.
    nonisolated(nonsending) func setExpiration<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], _ expiration: CacheExpiration, schema: TypeSchema
    ) async throws {
        for _ in 0..<8 {
            let now = core.clock.wallNanoseconds()
            guard let bytes = try await tier.record(type: schema.name, id: key) else {
                throw LocalStorageError.notFound(id: id)
            }
            let (header, payload, expect) = try bytes.withUnsafeBytes { buffer in
                let view = try RecordDecoding.view(of: buffer, T.self, id: id, sharedTier: true)
                guard !view.isExpired(at: now) else { throw LocalStorageError.notFound(id: id) }
                return (try view.header(in: schema, txn: nil), Array(view.payload), Array(bytes[16..<32]))
            }
            let record = PreparedRecord(
                id: id, key: key, payload: payload, format: header.format,
                version: header.version, indexValues: header.indexValues, value: id)
            // A new expiry is not an update: the header keeps its update time (and creation time).
            let put = try tier.put(
                record, expiresAt: try expiration.expiresAt(now: now), now: header.updatedAt,
                schema: schema, createdAt: header.createdAt, expect: expect, storedEnvelope: header.envelope)
            do {
                let written = try await tier.write([put], schema: schema, now: now)
                try await commitOwnUnobserved(written, key: key, schema: schema)
                return
            } catch is SharedTierConflict {
                continue
            }
        }
        throw LocalStorageError.sharedTierUnavailable(
            "setExpiration of \(T.self) \"\(id)\" kept meeting writes by other instances; nothing was changed")
    }

    /// Commits written records whose values this instance does not hold decoded (observers read them).
    private func commitOwnUnobserved(
        _ written: [(bytes: [UInt8], sequence: Int64)], key: [UInt8], schema: TypeSchema
    ) async throws {
        guard let item = written.first else { return }
        let tier = self.tier
        let id = String(decoding: key, as: UTF8.self)
        let admitted = try await core.writer.perform { context -> Bool in
            guard let admission = tier.admitsOwn(item.sequence, type: schema.name, id: id, context: context) else {
                return false
            }
            try RecordWriter.putReplica(
                item.bytes, key: key, value: nil, schema: schema, context: context,
                asNew: admission.overUnannouncedFill)
            return true
        }
        if !admitted { await tier.awaitApplied(item.sequence) }
    }

    /// `update` on the shared tier: reads the record there, runs `mutate` once, and writes the result only if
    /// nobody wrote the record in between.
    nonisolated(nonsending) func update<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema,
        _ mutate: @escaping @Sendable (inout T) throws -> Void
    ) async throws -> T {
        let now = tier.nextWriteTime()
        guard let (value, bytes, expiresAt) = try await sharedRecord(T.self, id: id, key: key, schema: schema, now: now)
        else {
            throw LocalStorageError.notFound(id: id)
        }
        var mutated = value
        do {
            try mutate(&mutated)
        } catch {
            throw CallerError(underlying: error)
        }
        let newID = try mutated.storageID()
        guard newID.utf8.elementsEqual(id.utf8) else {
            throw LocalStorageError.invalidId("update must not change the id (\(id) → \(newID))")
        }
        let record = try PreparedRecord(encoding: mutated, schema: schema, format: local.format)
        let put = try tier.put(record, expiresAt: expiresAt, now: now, schema: schema, expect: Array(bytes[16..<32]))
        do {
            let written = try await tier.write([put], schema: schema, now: now)
            try await tier.commitOwn(written, records: [record], schema: schema)
        } catch is SharedTierConflict {
            throw LocalStorageError.sharedTierUnavailable(
                "update of \(T.self) \"\(id)\": another instance wrote the record while mutate ran; nothing was written "
                    + "and mutate was not run again")
        }
        return mutated
    }
}
