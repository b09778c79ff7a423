/// The memory tier layered over the local store (``RecordStore``): a fetch by id returns a current,
/// unexpired value the ``MemoryTier`` holds as it is (no read, no decode); otherwise it reads and decodes
/// the record and the tier keeps it. Every other operation is the local store's (the tier learns of
/// writes from the change log, whoever made them).
struct MemoryTierRecordStore: RecordStore {
    let local: LocalRecordStore
    let tier: MemoryTier

    /// The memory tier `configuration` asks for, or nil.
    ///
    /// - Throws: `openFailed` when a bound is below 1.
    static func makeTier(_ configuration: LocalStorageConfiguration, core: StoreCore) throws -> MemoryTier? {
        guard let settings = configuration.memoryCache else { return nil }
        guard settings.maxRecords >= 1, settings.maxBytes >= 1 else {
            throw LocalStorageError.openFailed(
                path: core.directory.path,
                reason: "memoryCache: maxRecords and maxBytes must be at least 1 (got \(settings.maxRecords) "
                    + "and \(settings.maxBytes))")
        }
        return MemoryTier(
            maxRecords: settings.maxRecords, maxBytes: settings.maxBytes,
            environment: core.environment, changeLog: core.changeLog, logger: configuration.logger)
    }

    func heldValue<T: LocalStorable>(_ type: T.Type, id: String, schema: TypeSchema) -> (any Sendable)? {
        let key = MemoryTier.Key(type: schema.number, id: id)
        return held(T.self, for: key, now: local.core.clock.wallNanoseconds(), schema: schema, countingMiss: false)
    }

    /// The tier's value for `key`, its access noted for eviction, or nil.
    private func held<T: LocalStorable>(
        _ type: T.Type, for key: MemoryTier.Key, now: Int64, schema: TypeSchema, countingMiss: Bool
    ) -> (any Sendable)? {
        guard let held = tier.held(T.self, for: key, now: now, countingMiss: countingMiss) else { return nil }
        if schema.tracksRecency {
            var utf8 = key.id
            utf8.withUTF8 { local.core.accessNotes.note(type: schema.number, key: UnsafeRawBufferPointer($0)) }
        }
        return held
    }

    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, id: String, schema: TypeSchema
    ) async throws -> T? {
        let core = local.core
        let now = core.clock.wallNanoseconds()
        let tierKey = MemoryTier.Key(type: schema.number, id: id)
        var utf8 = id
        if let held = held(T.self, for: tierKey, now: now, schema: schema, countingMiss: true) {
            return MemoryTier.unwrap(held, as: T.self)
        }
        let session = local.makeDecodeSession(for: schema)
        var expired = false
        let value: T? = try utf8.withUTF8 { key in
            try RecordWriter.validate(keyLength: key.count)
            return try core.environment.read { txn in
                let value: T? = try readAndKeep(
                    T.self, key: UnsafeRawBufferPointer(key), tierKey: tierKey, schema: schema, now: now, txn: txn,
                    session: session, expired: &expired)
                if schema.tracksRecency, value != nil {
                    core.accessNotes.note(type: schema.number, key: UnsafeRawBufferPointer(key))
                }
                return value
            }
        }
        local.afterRead(session: session, expired: expired ? [Array(id.utf8)] : [], purge: false, schema: schema)
        return value
    }

    /// Reads and decodes the record under `key` in `txn` and keeps it in the tier; sets `expired` when the
    /// stored record has expired.
    private func readAndKeep<T: LocalStorable>(
        _ type: T.Type, key: UnsafeRawBufferPointer, tierKey: MemoryTier.Key, schema: TypeSchema, now: Int64,
        txn: Transaction, session: DecodeSession, expired: inout Bool
    ) throws -> T? {
        let found = try RecordReader.getForMemoryTier(
            T.self, key: key, id: tierKey.id, schema: schema, now: now, txn: txn, session: session)
        expired = found.expired
        if let value = found.value {
            tier.keep(value, for: tierKey, expiresAt: found.expiresAt, bytes: found.payloadBytes, readIn: txn)
        }
        return found.value
    }

    // MARK: - The local store's

    nonisolated(nonsending) func settle() async throws { try await local.settle() }

    nonisolated(nonsending) func metadata<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema
    ) async throws -> StorageMetadata? {
        try await local.metadata(T.self, id: id, key: key, schema: schema)
    }

    /// The held values among `ids` and the others read, all as of one snapshot: the tier is brought up to
    /// the read transaction's snapshot before it answers, and the records it does not hold are read and
    /// kept in that transaction.
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, ids: [T.ID], schema: TypeSchema
    ) async throws -> [T.ID: T] {
        let core = local.core
        let now = core.clock.wallNanoseconds()
        let names = try StorageKey.strings(for: ids)
        let session = local.makeDecodeSession(for: schema)
        var found: [T.ID: T] = [:]
        found.reserveCapacity(ids.count)
        var expired: [[UInt8]] = []
        try core.environment.read { txn in
            for position in names.indices {
                var name = names[position]
                let tierKey = MemoryTier.Key(type: schema.number, id: name)
                let value: T? = try name.withUTF8 { utf8 in
                    let key = UnsafeRawBufferPointer(utf8)
                    try RecordWriter.validate(keyLength: key.count)
                    if let held = tier.value(T.self, for: tierKey, now: now, in: txn) { return held }
                    var isExpired = false
                    let read = try readAndKeep(
                        T.self, key: key, tierKey: tierKey, schema: schema, now: now, txn: txn, session: session,
                        expired: &isExpired)
                    if isExpired { expired.append(Array(key)) }
                    return read
                }
                if let value {
                    found[ids[position]] = value
                    if schema.tracksRecency {
                        name.withUTF8 { core.accessNotes.note(type: schema.number, key: UnsafeRawBufferPointer($0)) }
                    }
                }
            }
        }
        local.afterRead(session: session, expired: expired, purge: false, schema: schema)
        return found
    }

    nonisolated(nonsending) func save(
        _ record: PreparedRecord, expiration: CacheExpiration, schema: TypeSchema
    ) async throws {
        try await local.save(record, expiration: expiration, schema: schema)
    }

    nonisolated(nonsending) func save(
        contentsOf records: [PreparedRecord], expiration: CacheExpiration, schema: TypeSchema
    ) async throws {
        try await local.save(contentsOf: records, expiration: expiration, schema: schema)
    }

    nonisolated(nonsending) func delete(id: String, key: [UInt8], schema: TypeSchema) async throws {
        try await local.delete(id: id, key: key, schema: schema)
    }

    nonisolated(nonsending) func deleteAll(schema: TypeSchema) async throws {
        try await local.deleteAll(schema: schema)
    }

    nonisolated(nonsending) func delete<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], schema: TypeSchema,
        locally: () async throws -> Int
    ) async throws -> Int {
        try await local.delete(T.self, matching: filters, schema: schema, locally: locally)
    }

    nonisolated(nonsending) func setExpiration<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], _ expiration: CacheExpiration, schema: TypeSchema
    ) async throws {
        try await local.setExpiration(T.self, id: id, key: key, expiration, schema: schema)
    }

    nonisolated(nonsending) func update<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema,
        _ mutate: @escaping @Sendable (inout T) throws -> Void
    ) async throws -> T {
        try await local.update(T.self, id: id, key: key, schema: schema, mutate)
    }

    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, options: FetchOptions, schema: TypeSchema
    ) async throws -> [T] {
        try await local.fetch(T.self, plan: plan, options: options, schema: schema)
    }

    nonisolated(nonsending) func count<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, scope: FetchOptions.Scope?, schema: TypeSchema
    ) async throws -> Int {
        try await local.count(T.self, plan: plan, scope: scope, schema: schema)
    }

    nonisolated(nonsending) func page<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, page: Int, pageSize: Int, options: FetchOptions, schema: TypeSchema
    ) async throws -> StoragePage<T> {
        try await local.page(T.self, plan: plan, page: page, pageSize: pageSize, options: options, schema: schema)
    }

    /// A load through the cache: a live record is served as a plain fetch serves it (from this tier when it
    /// holds it, counted as a hit or a miss); otherwise the local store loads it, and its commit refreshes this
    /// tier. With `refreshAfter` the local store answers (it needs the record's update time).
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, id: T.ID, policy: LoadPolicy, schema: TypeSchema,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        if policy.refreshAfter == nil {
            // The policy is refused as the load would refuse it, held record or not.
            _ = try policy.validated(at: local.core.clock.wallNanoseconds())
            if let held = try await fetch(T.self, id: try StorageKey.string(for: id), schema: schema) { return held }
        }
        return try await local.fetch(T.self, id: id, policy: policy, schema: schema, load: load)
    }

    func checkTransaction(writes: Bool) throws { try local.checkTransaction(writes: writes) }

    /// The memory tier's own counts.
    var memoryCounts: (hits: Int, misses: Int) { (tier.hits, tier.misses) }

    func close() { local.close() }
}
