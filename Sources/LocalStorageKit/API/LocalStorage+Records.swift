import Foundation

extension LocalStorage {
    // MARK: - Saving

    /// Saves `value`, replacing any record with its id.
    ///
    /// Re-saving an id keeps its `createdAt`, moves `updatedAt` and takes the new expiration. Concurrent
    /// saves from many tasks are committed together; the call returns when the commit is durable.
    /// - Throws: `invalidId` for an empty or over-long id, `encodingFailed`, `storageFull`.
    public func save<T: LocalStorable>(_ value: T, expiration: CacheExpiration = .never) async throws {
        try await operation("save") {
            let schema = try await core.schema(for: T.self)
            let record = try prepare(value, schema: schema)
            if let sharedTier {
                return try await saveShared(
                    [record], expiration: expiration, schema: schema,
                    tier: sharedTier)
            }
            try await core.writer.perform { context in
                try RecordWriter.put(
                    record, expiresAt: try expiration.expiresAt(now: context.now), schema: schema,
                    context: context)
            }
        }
    }

    /// Saves every value in one transaction: all of them or, on failure, none.
    ///
    /// When the sequence repeats an id, the last value wins.
    public func save<T: LocalStorable, S: Sequence & Sendable>(
        contentsOf values: S, expiration: CacheExpiration = .never
    ) async throws where S.Element == T {
        try await operation("save(contentsOf:)") {
            let schema = try await core.schema(for: T.self)
            let indexValues = T.indexValueComputer()
            let records = try values.map { try prepare($0, schema: schema, indexValues: indexValues) }
            guard !records.isEmpty else { return }
            // Applying puts in key order fills pages better and is several times faster; a repeated id
            // keeps its last value.
            let ordered = RecordWriter.sortedByKey(records)
            if let sharedTier {
                return try await saveShared(
                    ordered, expiration: expiration, schema: schema,
                    tier: sharedTier)
            }
            try await core.writer.perform { context in
                let expiresAt = try expiration.expiresAt(now: context.now)
                try RecordWriter.putAll(ordered, expiresAt: expiresAt, schema: schema, context: context)
            }
        }
    }

    /// Encodes a value and its index values for the writer.
    func prepare<T: LocalStorable>(
        _ value: T, schema: TypeSchema,
        indexValues: ((T) -> [StoredIndexValue])? = nil
    ) throws -> PreparedRecord {
        let id = try value.storageID()
        let key = try RecordWriter.key(for: id)
        let format = configuration.codec.format
        return PreparedRecord(
            id: id, key: key, payload: try PayloadCodec.encode(value, as: format),
            format: format, version: schema.version,
            indexValues: indexValues?(value) ?? value.indexValuesForStorage, value: value)
    }

    // MARK: - Reading

    /// The record with `id`, or nil when it is absent or expired.
    ///
    /// - Throws: `decodingFailed` when the stored payload does not decode as `T`; `migrationFailed`.
    nonisolated(nonsending) public func fetch<T: LocalStorable>(_ type: T.Type, id: String) async throws -> T? {
        try await operation("fetch") {
            let schema = try await core.schema(for: T.self)
            try await sharedTier?.awaitSettled()
            if let memoryTier {
                let value = try fetch(T.self, id: id, schema: schema, through: memoryTier)
                if value == nil, let sharedTier {
                    return try await fetchShared(T.self, id: id, schema: schema, tier: sharedTier)
                }
                return value
            }
            let now = core.clock.wallNanoseconds()
            let session = makeDecodeSession(for: schema)
            var expired = false
            var utf8 = id
            // The id's own UTF-8 is the key: no copy on the hot path.
            let value: T? = try utf8.withUTF8 { key in
                try RecordWriter.validate(keyLength: key.count)
                return try core.environment.read { txn in
                    let found = try RecordReader.get(
                        T.self, key: UnsafeRawBufferPointer(key), id: id, schema: schema,
                        now: now, txn: txn, session: session)
                    expired = found.expired
                    if schema.tracksRecency, found.value != nil {
                        core.accessNotes.note(type: schema.number, key: UnsafeRawBufferPointer(key))
                    }
                    return found.value
                }
            }
            followUp(session: session, expired: expired ? [Array(id.utf8)] : [], purge: false, schema: schema)
            if value == nil, let sharedTier {
                return try await fetchShared(T.self, id: id, schema: schema, tier: sharedTier)
            }
            return value
        }
    }

    /// Live records of `T` in `options.sort` order (by id unless told otherwise), paged by limit and offset.
    ///
    /// Complexity: O(offset + limit) entries walked; only returned rows are decoded.
    nonisolated(nonsending) public func fetch<T: LocalStorable>(
        _ type: T.Type, options: FetchOptions = FetchOptions()
    ) async throws -> [T] {
        try await operation("fetch(options:)") {
            if options.scope == .shared {
                return try await fetchShared(T.self, matching: [], orderedBy: nil, options: options)
            }
            let options = try options.validated()
            let schema = try await core.schema(for: T.self)
            try await sharedTier?.awaitSettled()
            let now = core.clock.wallNanoseconds()
            let session = makeDecodeSession(for: schema)
            let (items, expired) = try core.environment.read { txn in
                try RecordReader.list(T.self, schema: schema, options: options, now: now, txn: txn, session: session)
            }
            followUp(session: session, expired: expired, purge: options.purgeExpired, schema: schema)
            return items
        }
    }

    /// The number of live (unexpired) records of `T`.
    ///
    /// Complexity: O(expired but unpurged records); decodes nothing.
    nonisolated(nonsending) public func count<T: LocalStorable>(_ type: T.Type) async throws -> Int {
        try await operation("count") {
            let schema = try await core.schema(for: T.self)
            try await sharedTier?.awaitSettled()
            let now = core.clock.wallNanoseconds()
            return try core.environment.read { txn in try RecordReader.count(schema: schema, now: now, txn: txn) }
        }
    }

    /// What the store knows about a record: timestamps, expiry, size, version.
    ///
    /// The one read that still returns an expired record (with `isExpired == true`) until it is purged.
    nonisolated(nonsending) public func metadata<T: LocalStorable>(
        _ type: T.Type, id: String
    ) async throws -> StorageMetadata? {
        try await operation("metadata") {
            let schema = try await core.schema(for: T.self)
            let key = try RecordWriter.key(for: id)
            try await sharedTier?.awaitSettled()
            let now = core.clock.wallNanoseconds()
            let local = try core.environment.read { txn in
                try RecordReader.metadata(T.self, key: key, id: id, schema: schema, now: now, txn: txn)
            }
            if local == nil, let sharedTier {
                return try await metadataShared(T.self, id: id, key: key, schema: schema, tier: sharedTier)
            }
            return local
        }
    }

    // MARK: - Deleting

    /// Deletes the record with `id`; deleting a missing id does nothing.
    public func delete<T: LocalStorable>(_ type: T.Type, id: String) async throws {
        try await operation("delete") {
            let schema = try await core.schema(for: T.self)
            let key = try RecordWriter.key(for: id)
            if let sharedTier { return try await deleteShared(id: id, key: key, schema: schema, tier: sharedTier) }
            _ = try await core.writer.perform { context in
                try RecordWriter.delete(id: id, key: key, schema: schema, context: context)
            }
        }
    }

    /// Deletes every record of `T` (emits one `.cleared`).
    public func deleteAll<T: LocalStorable>(_ type: T.Type) async throws {
        try await operation("deleteAll") {
            let schema = try await core.schema(for: T.self)
            if let sharedTier { return try await deleteAllShared(schema: schema, tier: sharedTier) }
            try await core.writer.perform { context in try RecordWriter.clear(schema: schema, context: context) }
        }
    }

    /// Deletes every expired record of every type in the store; returns how many.
    ///
    /// Emits `.expired(id)` for each. Works in bounded batches.
    @discardableResult
    public func purgeExpired() async throws -> Int {
        try await operation("purgeExpired") {
            let meta = core.meta
            return try await core.writer.performExclusive { writer in
                try RecordWriter.purgeAllExpired(meta: meta, writer: writer)
            }
        }
    }

    /// What a read leaves for the writer: the records it migrated, to write back, and the expired ones it
    /// met, to purge when `purge` or ``LocalStorageConfiguration/autoPurgeExpiredOnRead`` asks. Returns at once.
    func followUp(session: DecodeSession, expired: [[UInt8]], purge: Bool, schema: TypeSchema) {
        writeBack(session, schema: schema)
        if !expired.isEmpty && (purge || configuration.autoPurgeExpiredOnRead) {
            self.purge(keys: expired, schema: schema)
        }
    }

    /// Hands the writer the records a read found expired, to delete if they still are (emitting
    /// `.expired(id)`), and returns at once: a read never waits for a commit. A failure is logged.
    func purge(keys: [[UInt8]], schema: TypeSchema) {
        let logger = self.logger
        core.writer.hand(
            { context in
                try RecordWriter.purge(keys: keys, schema: schema, context: context, logger: logger)
            },
            finish: { error in
                guard let error else { return }
                logger?.log(
                    level: .warning, message: "Could not purge expired records a read found",
                    metadata: ["type": schema.name, "error": "\(LocalStorageError.wrapping(error))"])
            })
    }

    // MARK: - Changing one record

    /// Changes a record's time to live without rewriting its value.
    ///
    /// - Throws: `notFound(id:)` when the record is absent or expired.
    public func setExpiration<T: LocalStorable>(
        _ type: T.Type, id: String,
        _ expiration: CacheExpiration
    ) async throws {
        try await operation("setExpiration") {
            let schema = try await core.schema(for: T.self)
            let key = try RecordWriter.key(for: id)
            if let sharedTier {
                return try await setExpirationShared(
                    T.self, id: id, key: key, expiration, schema: schema,
                    tier: sharedTier)
            }
            try await core.writer.perform { context in
                try RecordWriter.setExpiration(T.self, id: id, key: key, expiration, schema: schema, context: context)
            }
        }
    }

    /// Reads, mutates and writes a record in one transaction; returns the new value.
    ///
    /// `mutate` runs on the writer thread, exactly once, in a group commit of such calls only: keep it short.
    /// The record keeps its expiration.
    /// - Throws: `notFound(id:)` when the record is absent or expired; `invalidId` if `mutate` changes the id;
    ///   whatever `mutate` throws, unchanged (nothing is written then).
    @discardableResult
    public func update<T: LocalStorable>(
        _ type: T.Type, id: String,
        _ mutate: @escaping @Sendable (inout T) throws -> Void
    ) async throws -> T {
        try await operationPassingCallerErrors("update") {
            let schema = try await core.schema(for: T.self)
            let key = try RecordWriter.key(for: id)
            if let sharedTier {
                return try await updateShared(T.self, id: id, key: key, schema: schema, tier: sharedTier, mutate)
            }
            let format = configuration.codec.format
            let counter = core.decodes
            let memo = UpdateMemo<T>()
            return try await core.writer.performOnce { context -> T in
                guard let bytes = try context.txn.get(schema.records, key: key) else {
                    throw LocalStorageError.notFound(id: id)
                }
                let view = try RecordDecoding.view(of: bytes, T.self, id: id)
                guard !view.isExpired(at: context.now) else { throw LocalStorageError.notFound(id: id) }
                let record: PreparedRecord
                let value: T
                if let done = memo.result {
                    // A replay (another update of the batch threw, or the map grew): reuse what `mutate` made
                    // when the record is still the one it saw; never call it twice.
                    guard done.version == view.version, done.payload.elementsEqual(view.payload) else {
                        throw LocalStorageError.storageError(
                            code: -1,
                            message:
                                "update of \(T.self) \"\(id)\": the record changed while the write was retried; "
                                + "mutate was not run again")
                    }
                    (record, value) = (done.record, done.value)
                } else {
                    var mutated = try RecordDecoding.decode(
                        T.self, view: view, id: id,
                        session: DecodeSession(counter: counter, format: format, sealing: schema.sealing))
                    do {
                        try mutate(&mutated)
                    } catch {
                        throw CallerError(underlying: error)
                    }
                    let newID = try mutated.storageID()
                    guard newID == id else {
                        throw LocalStorageError.invalidId("update must not change the id (\(id) → \(newID))")
                    }
                    record = PreparedRecord(
                        id: id, key: key, payload: try PayloadCodec.encode(mutated, as: format),
                        format: format, version: T.storageVersion,
                        indexValues: mutated.indexValuesForStorage, value: mutated)
                    value = mutated
                    memo.result = (Array(view.payload), view.version, record, mutated)
                }
                try RecordWriter.put(record, expiresAt: view.expiresAt, schema: schema, context: context)
                return value
            }
        }
    }
}

/// What an `update`'s `mutate` made, kept for a replay of its transaction (after the map grew).
private final class UpdateMemo<T>: @unchecked Sendable {
    // @unchecked: only the writer thread touches it, inside the one request that owns it.
    var result: (payload: [UInt8], version: Int, record: PreparedRecord, value: T)?
}
