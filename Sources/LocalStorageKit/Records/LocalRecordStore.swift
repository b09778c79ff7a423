/// The bottom of the tier stack (``RecordStore``): the records in LMDB, written by the store's writer
/// thread (``RecordWriter`` inside `core.writer`) and read in read transactions (``RecordReader``).
///
/// It also holds what every layer and the public methods share about a read: the decode session that
/// counts decodes and collects migrated records, and the follow-up that hands the writer those records
/// and the expired ones met.
struct LocalRecordStore: RecordStore {
    let core: StoreCore
    /// The payload format new records are written in (``LocalStorageConfiguration/codec``).
    let format: PayloadFormat
    let logger: (any StorageLogger)?
    /// ``LocalStorageConfiguration/autoPurgeExpiredOnRead``.
    let autoPurgeExpiredOnRead: Bool

    init(core: StoreCore, configuration: LocalStorageConfiguration) {
        self.core = core
        format = configuration.codec.format
        logger = configuration.logger
        autoPurgeExpiredOnRead = configuration.autoPurgeExpiredOnRead
    }

    // MARK: - Reads

    nonisolated(nonsending) func settle() async throws {}

    /// Nothing: this store keeps no values in memory.
    func heldValue<T: LocalStorable>(_ type: T.Type, id: String, schema: TypeSchema) -> (any Sendable)? { nil }

    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, id: String, schema: TypeSchema
    ) async throws -> T? {
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        var expired = false
        var utf8 = id
        // The id's own UTF-8 is the key: no copy on the hot path. The closures return nothing: a generic call
        // returning `T?` makes unspecialized code look the type `T?` up in the runtime at every fetch.
        var value: T?
        try utf8.withUTF8 { key in
            try RecordWriter.validate(keyLength: key.count)
            try core.environment.read { txn in
                value = try RecordReader.get(
                    T.self, key: UnsafeRawBufferPointer(key), id: id, schema: schema,
                    now: now, txn: txn, session: session, expired: &expired)
                if schema.tracksRecency, value != nil {
                    core.accessNotes.note(type: schema.number, key: UnsafeRawBufferPointer(key))
                }
            }
        }
        afterRead(session: session, expired: expired ? [Array(id.utf8)] : [], purge: false, schema: schema)
        return value
    }

    nonisolated(nonsending) func metadata<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema
    ) async throws -> StorageMetadata? {
        // What reads handed the writer for this record (a purge, a migration's write-back) shows here.
        await core.readLeftovers.settled(ReadLeftovers.Record(type: schema.number, key: key))
        let now = core.clock.wallNanoseconds()
        return try core.environment.read { txn in
            try RecordReader.metadata(T.self, key: key, id: id, schema: schema, now: now, txn: txn)
        }
    }

    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, ids: [T.ID], schema: TypeSchema
    ) async throws -> [T.ID: T] {
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        let (found, expired) = try core.environment.read { txn in
            try RecordReader.getMany(T.self, ids: ids, schema: schema, now: now, txn: txn, session: session)
        }
        afterRead(session: session, expired: expired, purge: false, schema: schema)
        return found
    }

    // MARK: - Writes

    nonisolated(nonsending) func save(
        _ record: PreparedRecord, expiration: CacheExpiration, schema: TypeSchema
    ) async throws {
        try await core.writer.perform { context in
            try RecordWriter.put(
                record, expiresAt: try expiration.expiresAt(now: context.now), schema: schema, context: context)
        }
    }

    nonisolated(nonsending) func save(
        contentsOf records: [PreparedRecord], expiration: CacheExpiration, schema: TypeSchema
    ) async throws {
        try await core.writer.perform { context in
            let expiresAt = try expiration.expiresAt(now: context.now)
            try RecordWriter.putAll(records, expiresAt: expiresAt, schema: schema, context: context)
        }
    }

    nonisolated(nonsending) func delete(id: String, key: [UInt8], schema: TypeSchema) async throws {
        _ = try await core.writer.perform { context in
            try RecordWriter.delete(id: id, key: key, schema: schema, context: context)
        }
    }

    nonisolated(nonsending) func deleteAll(schema: TypeSchema) async throws {
        try await core.writer.perform { context in try RecordWriter.clear(schema: schema, context: context) }
    }

    nonisolated(nonsending) func delete<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], schema: TypeSchema,
        locally: () async throws -> Int
    ) async throws -> Int {
        try await locally()
    }

    nonisolated(nonsending) func setExpiration<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], _ expiration: CacheExpiration, schema: TypeSchema
    ) async throws {
        try await core.writer.perform { context in
            try RecordWriter.setExpiration(T.self, id: id, key: key, expiration, schema: schema, context: context)
        }
    }

    func close() {}

    // MARK: - What reads share

    /// A decode session for one read: counts decodes and collects records migrated on the way.
    func makeDecodeSession(for schema: TypeSchema) -> DecodeSession {
        let session = DecodeSession(
            counter: core.decodes, format: format, logger: logger,
            currentVersion: schema.version, sealing: schema.sealing, typeName: schema.name, indexing: schema.runtime)
        if schema.tracksRecency {
            let (notes, type) = (core.accessNotes, schema.number)
            session.noteUse = { notes.note(type: type, key: $0) }
        }
        return session
    }

    /// What a read leaves for the writer: the records it migrated, to write back, and the expired ones it
    /// met, to purge when `purge` or ``LocalStorageConfiguration/autoPurgeExpiredOnRead`` asks. Returns at once.
    func afterRead(session: DecodeSession, expired: [[UInt8]], purge: Bool, schema: TypeSchema) {
        writeBack(session, schema: schema)
        if !expired.isEmpty && (purge || autoPurgeExpiredOnRead) {
            self.purge(keys: expired, schema: schema)
        }
    }

    /// Hands the writer the records a read found expired, to delete if they still are (emitting
    /// `.expired(id)`), and returns at once: a read never waits for a commit. A failure is logged.
    func purge(keys: [[UInt8]], schema: TypeSchema) {
        let logger = self.logger
        handOver(keys: keys, schema: schema, failure: "Could not purge expired records a read found") { context in
            try RecordWriter.purge(keys: keys, schema: schema, context: context, logger: logger)
        }
    }

    /// Hands the writer the records a read migrated, so each migrates once, and returns at once: a read
    /// never waits for a commit. A failure is logged, not thrown: the read already has its values, and
    /// the record will migrate again next time.
    func writeBack(_ session: DecodeSession, schema: TypeSchema) {
        let upgrades = session.upgrades
        guard !upgrades.isEmpty else { return }
        handOver(keys: upgrades.map(\.key), schema: schema, failure: "Could not store migrated records") { context in
            for upgrade in upgrades { try RecordWriter.apply(upgrade, schema: schema, context: context) }
        }
    }

    /// Queues `body`, work a read left on the records `keys`, for the writer's next commit, counted in
    /// ``ReadLeftovers`` until it is done (``metadata(_:id:key:schema:)`` waits for it); a failure is logged
    /// with `failure`.
    private func handOver(
        keys: [[UInt8]], schema: TypeSchema, failure: String, _ body: @escaping (CommitQueue.Context) throws -> Void
    ) {
        let logger = self.logger
        let leftovers = core.readLeftovers
        let records = keys.map { ReadLeftovers.Record(type: schema.number, key: $0) }
        leftovers.queued(records)
        core.writer.queueForNextCommit(body) { error in
            leftovers.finished(records)
            guard let error else { return }
            logger?.log(
                level: .warning, message: failure,
                metadata: ["type": schema.name, "error": "\(LocalStorageError.wrapping(error))"])
        }
    }
}
