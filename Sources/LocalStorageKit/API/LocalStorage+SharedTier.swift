import Foundation
import Synchronization

/// The operations of a store with a shared tier (``LocalStorageConfiguration/sharedTier``): writes go to the
/// server first, then commit locally; reads are local first and fill local misses from the server.
extension LocalStorage {
    /// The shared tier, for a query with `scope: .shared`.
    ///
    /// - Throws: `invalidQuery` when the store has none.
    func requireSharedTier() throws(LocalStorageError) -> SharedTier {
        guard let sharedTier else {
            throw .invalidQuery("scope .shared needs a shared tier (LocalStorageConfiguration.sharedTier)")
        }
        return sharedTier
    }

    // MARK: - Writes

    /// Writes records on the shared tier, then commits them locally with the server's bytes.
    func saveShared(
        _ records: [PreparedRecord], expiration: CacheExpiration, schema: TypeSchema,
        tier: SharedTier
    ) async throws {
        let now = core.clock.wallNanoseconds()
        let expiresAt = try expiration.expiresAt(now: now)
        let puts = try records.map { try tier.put($0, expiresAt: expiresAt, now: now, schema: schema) }
        let written = try await tier.write(puts, schema: schema, now: now)
        try await tier.commitOwn(written, records: records, schema: schema)
    }

    /// Deletes a record on the shared tier, then locally.
    func deleteShared(id: String, key: [UInt8], schema: TypeSchema, tier: SharedTier) async throws {
        guard let sequence = try await tier.delete(ids: [id], schema: schema).first else { return }
        let admitted = try await core.writer.perform { context -> Bool in
            guard tier.admitsOwn(sequence) else { return false }
            try RecordWriter.delete(id: id, key: key, schema: schema, context: context)
            return true
        }
        if !admitted { await tier.awaitApplied(sequence) }
    }

    /// Deletes every record of a type on the shared tier, then locally.
    func deleteAllShared(schema: TypeSchema, tier: SharedTier) async throws {
        let sequence = try await tier.clear(schema: schema)
        let admitted = try await core.writer.perform { context -> Bool in
            guard tier.admitsOwn(sequence) else { return false }
            try RecordWriter.clear(schema: schema, context: context)
            return true
        }
        if !admitted { await tier.awaitApplied(sequence) }
    }

    /// The live record `id` as the shared tier holds it, with its bytes; nil when absent or expired.
    private func sharedRecord<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema,
        tier: SharedTier, now: Int64
    ) async throws
        -> (value: T, bytes: [UInt8], expiresAt: Int64)?
    {
        guard let bytes = try await tier.record(type: schema.name, id: key) else { return nil }
        let session = makeDecodeSession(for: schema)
        return try bytes.withUnsafeBytes { buffer -> (value: T, bytes: [UInt8], expiresAt: Int64)? in
            let view = try RecordDecoding.view(of: buffer, T.self, id: id)
            guard !view.isExpired(at: now) else { return nil }
            return (try RecordDecoding.decode(T.self, view: view, id: id, session: session), bytes, view.expiresAt)
        }
    }

    /// Changes a record's time to live on the shared tier (re-reading and retrying when another instance
    /// writes it meanwhile), then locally.
    func setExpirationShared<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], _ expiration: CacheExpiration,
        schema: TypeSchema, tier: SharedTier
    ) async throws {
        for _ in 0..<8 {
            let now = core.clock.wallNanoseconds()
            guard let bytes = try await tier.record(type: schema.name, id: key) else {
                throw LocalStorageError.notFound(id: id)
            }
            let (header, payload, expect) = try bytes.withUnsafeBytes { buffer in
                let view = try RecordDecoding.view(of: buffer, T.self, id: id)
                guard !view.isExpired(at: now) else { throw LocalStorageError.notFound(id: id) }
                return (view.header(), Array(view.payload), Array(bytes[16..<32]))
            }
            let record = PreparedRecord(
                id: id, key: key, payload: payload, format: header.format,
                version: header.version, indexValues: header.indexValues, value: id)
            // A new expiry is not an update: the header keeps its update time (and creation time).
            let put = try tier.put(
                record, expiresAt: try expiration.expiresAt(now: now), now: header.updatedAt,
                schema: schema, createdAt: header.createdAt, expect: expect)
            do {
                let written = try await tier.write([put], schema: schema, now: now)
                try await commitOwnUnobserved(written, key: key, schema: schema, tier: tier)
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
        _ written: [(bytes: [UInt8], sequence: Int64)], key: [UInt8], schema: TypeSchema,
        tier: SharedTier
    ) async throws {
        guard let item = written.first else { return }
        let admitted = try await core.writer.perform { context -> Bool in
            guard tier.admitsOwn(item.sequence) else { return false }
            try RecordWriter.putReplica(item.bytes, key: key, value: nil, schema: schema, context: context)
            return true
        }
        if !admitted { await tier.awaitApplied(item.sequence) }
    }

    /// `update` on the shared tier: reads the record there, runs `mutate` once, and writes the result only if
    /// nobody wrote the record in between.
    func updateShared<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema,
        tier: SharedTier, _ mutate: @Sendable (inout T) throws -> Void
    ) async throws -> T {
        let now = core.clock.wallNanoseconds()
        guard
            let (value, bytes, expiresAt) = try await sharedRecord(
                T.self, id: id, key: key, schema: schema,
                tier: tier, now: now)
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
        guard newID == id else { throw LocalStorageError.invalidId("update must not change the id (\(id) → \(newID))") }
        let record = try prepare(mutated, schema: schema)
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

    // MARK: - Reads

    /// A local miss: reads the shared tier and keeps the record locally with its remaining time to live. The
    /// fill is not a change (nothing is logged or published), and it is kept only when the instance is in sync,
    /// no change it applied after the server's sequence at the read touched the record (such a change may be
    /// newer than the bytes read), and it holds no live copy by then.
    ///
    /// - Throws: `sharedTierUnavailable` when the server cannot be reached: never a false nil.
    func fetchShared<T: LocalStorable>(
        _ type: T.Type, id: String, schema: TypeSchema,
        tier: SharedTier
    ) async throws -> T? {
        let key = try RecordWriter.key(for: id)
        let (found, sequence) = try await tier.recordWithSequence(type: schema.name, id: key)
        guard let bytes = found else { return nil }
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        let decoded = try bytes.withUnsafeBytes { buffer -> T? in
            let view = try RecordDecoding.view(of: buffer, T.self, id: id)
            guard !view.isExpired(at: now) else { return nil }
            return try RecordDecoding.decode(T.self, view: view, id: id, session: session)
        }
        guard let value = decoded else { return nil }
        let logger = self.logger
        core.writer.hand(
            { context in
                let isCurrent = tier.state.withLock { state -> Bool in
                    guard state.phase == .live, let applied = state.appliedSeq else { return false }
                    return applied <= sequence
                        || !state.recentChanges.mayHaveChanged(type: schema.name, id: id, after: sequence)
                }
                guard isCurrent else { return }
                if let existing = try context.txn.get(schema.records, key: key) {
                    let isLive: Bool
                    do {
                        isLive = try !RecordView(fixedPartOf: existing).isExpired(at: context.now)
                    } catch {
                        isLive = false  // A damaged local copy is replaced by the server's record.
                    }
                    if isLive { return }  // A live local copy (written meanwhile) wins.
                }
                try RecordWriter.putReplica(
                    bytes, key: key, value: value, schema: schema, context: context, announce: false)
            },
            finish: { error in
                guard let error else { return }
                logger?.log(
                    level: .warning, message: "Could not keep a record read from the shared tier",
                    metadata: ["type": schema.name, "error": "\(LocalStorageError.wrapping(error))"])
            })
        return value
    }

    /// A local miss of `metadata`: the header as the shared tier holds it.
    func metadataShared<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema,
        tier: SharedTier
    ) async throws -> StorageMetadata? {
        guard let bytes = try await tier.record(type: schema.name, id: key) else { return nil }
        let now = core.clock.wallNanoseconds()
        return try bytes.withUnsafeBytes { buffer in
            let view = try RecordDecoding.view(of: buffer, T.self, id: id, fixedPartOnly: true)
            return StorageMetadata(
                createdAt: Clock.date(fromNanoseconds: view.createdAt),
                updatedAt: Clock.date(fromNanoseconds: view.updatedAt),
                expiresAt: view.expiresAt == 0 ? nil : Clock.date(fromNanoseconds: view.expiresAt),
                sizeInBytes: view.payload.count, isExpired: view.isExpired(at: now), version: view.version)
        }
    }
}

// MARK: - Queries on the shared tier

extension LocalStorage {
    /// The number of live records of `T` matching every filter, counted where `options.scope` says: on this
    /// store (`.local`) or on the shared tier (`.shared`, in O(log n) per range with `ZLEXCOUNT`). Only
    /// `scope` of `options` matters.
    ///
    /// - Throws: `unknownIndex`, `invalidQuery` (also for `.shared` without a shared tier),
    ///   `sharedTierUnavailable`.
    nonisolated(nonsending) public func count<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter],
        options: FetchOptions
    ) async throws -> Int {
        guard options.scope == .shared else { return try await count(T.self, matching: filters) }
        return try await operation("count(matching:options:)") {
            let tier = try requireSharedTier()
            let schema = try await core.schema(for: T.self)
            let plan = try QueryPlan(filters: filters, sort: nil, schema: schema)
            return try await SharedTierQuery(tier: tier, schema: schema, plan: plan).count()
        }
    }

    /// One page of the records of `T` matching every filter, read where `options.scope` says (its `limit` and
    /// `offset` are replaced by the page's).
    ///
    /// - Throws: `invalidQuery` when `page` or `pageSize` is below 1; `unknownIndex`; `sharedTierUnavailable`.
    nonisolated(nonsending) public func page<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
        page: Int, pageSize: Int, options: FetchOptions
    ) async throws -> StoragePage<T> {
        guard options.scope == .shared else {
            return try await self.page(T.self, matching: filters, orderedBy: sort, page: page, pageSize: pageSize)
        }
        return try await operation("page(options:)") {
            try QueryRunner.validate(page: page, pageSize: pageSize)
            let tier = try requireSharedTier()
            let schema = try await core.schema(for: T.self)
            let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
            let query = SharedTierQuery(tier: tier, schema: schema, plan: plan)
            let total = try await query.count()
            let (offset, overflow) = (page - 1).multipliedReportingOverflow(by: pageSize)
            var pageOptions = options
            pageOptions.offset = overflow ? Int.max : offset
            pageOptions.limit = pageSize
            let items =
                offset >= total || overflow
                ? []
                : try await query.fetch(T.self, options: pageOptions, session: makeDecodeSession(for: schema))
            return StoragePage(items: items, page: page, pageSize: pageSize, totalCount: total)
        }
    }

    /// `fetch(_:matching:orderedBy:options:)` with `scope: .shared`.
    func fetchShared<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter],
        orderedBy sort: StorageIndexSort?, options: FetchOptions
    ) async throws -> [T] {
        let tier = try requireSharedTier()
        let options = try options.validated()
        let schema = try await core.schema(for: T.self)
        let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
        return try await SharedTierQuery(tier: tier, schema: schema, plan: plan)
            .fetch(T.self, options: options, session: makeDecodeSession(for: schema))
    }
}

extension LocalRepository {
    /// The number of live records matching every filter, counted where `options.scope` says.
    nonisolated(nonsending) public func count(
        matching filters: [StorageIndexFilter], options: FetchOptions
    ) async throws -> Int {
        try await storage.count(T.self, matching: filters, options: options)
    }

    /// One page of the records matching every filter, read where `options.scope` says.
    nonisolated(nonsending) public func page(
        matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
        page: Int, pageSize: Int, options: FetchOptions
    ) async throws -> StoragePage<T> {
        try await storage.page(
            T.self, matching: filters, orderedBy: sort, page: page, pageSize: pageSize,
            options: options)
    }
}

extension LocalStorage {
    /// Why `write { }` throws on a store with a shared tier: its body runs inside a local transaction, which
    /// cannot wait for the server.
    static let writeTransactionsNotShared =
        "write { } transactions do not reach the shared tier; use save, "
        + "save(contentsOf:), delete, deleteAll, setExpiration or update, which do"
}
