/// Reads through the shared tier: local records first (once they may be served), and a local miss read
/// from the server.
extension SharedTierRecordStore {
    /// Nothing: a read behind the shared tier waits until the tier is settled first.
    func heldValue<T: LocalStorable>(_ type: T.Type, id: String, schema: TypeSchema) -> (any Sendable)? { nil }

    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, id: String, schema: TypeSchema
    ) async throws -> T? {
        try await tier.awaitSettled()
        if let value = try await base.fetch(T.self, id: id, schema: schema) { return value }
        return try await fetchFromServer(T.self, id: id, schema: schema)
    }

    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, ids: [T.ID], schema: TypeSchema
    ) async throws -> [T.ID: T] {
        try await tier.awaitSettled()
        var found = try await base.fetch(T.self, ids: ids, schema: schema)
        // Local misses are read from the shared tier together: one round trip, one moment of the server's.
        var missing: [String: T.ID] = [:]
        for id in ids where found[id] == nil { missing[try StorageKey.string(for: id)] = id }
        guard !missing.isEmpty else { return found }
        let names = Array(missing.keys)
        let read = try await fetchFromServer(T.self, ids: names, schema: schema)
        for (name, value) in read { if let id = missing[name] { found[id] = value } }
        return found
    }

    nonisolated(nonsending) func metadata<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema
    ) async throws -> StorageMetadata? {
        try await tier.awaitSettled()
        if let local = try await base.metadata(T.self, id: id, key: key, schema: schema) { return local }
        return try await metadataFromServer(T.self, id: id, key: key, schema: schema)
    }

    /// A local miss: reads the shared tier and keeps the record locally with its remaining time to live. The
    /// fill is not a change (nothing is logged or published), and it is kept only when the instance is in sync,
    /// no change it applied after the server's sequence at the read touched the record (such a change may be
    /// newer than the bytes read), and it holds no live copy by then.
    ///
    /// - Throws: `sharedTierUnavailable` when the server cannot be reached: never a false nil.
    func fetchFromServer<T: LocalStorable>(_ type: T.Type, id: String, schema: TypeSchema) async throws -> T? {
        try await fetchFromServer(T.self, ids: [id], schema: schema)[id]
    }

    /// Local misses `ids` read from the shared tier in one round trip (see ``fetchFromServer(_:id:schema:)``),
    /// by id; the ids the server does not hold live are left out.
    func fetchFromServer<T: LocalStorable>(
        _ type: T.Type, ids: [String], schema: TypeSchema
    ) async throws -> [String: T] {
        let keys = try ids.map { try RecordWriter.key(for: $0) }
        let (records, sequence) = try await tier.recordsWithSequence(type: schema.name, ids: keys)
        let now = core.clock.wallNanoseconds()
        let session = local.makeDecodeSession(for: schema)
        var values: [String: T] = [:]
        for (position, found) in records.enumerated() {
            guard let bytes = found else { continue }
            let id = ids[position]
            let decoded = try bytes.withUnsafeBytes { buffer -> T? in
                let view = try RecordDecoding.view(of: buffer, T.self, id: id, sharedTier: true)
                guard !view.isExpired(at: now) else { return nil }
                return try RecordDecoding.decode(T.self, view: view, id: id, session: session)
            }
            guard let value = decoded else { continue }
            keep(bytes, key: keys[position], value: value, id: id, sequence: sequence, schema: schema)
            values[id] = value
        }
        return values
    }

    /// Keeps a record read from the shared tier at `sequence` locally, unless it may be out of date by then
    /// (see ``fetchFromServer(_:id:schema:)``).
    private func keep<T: LocalStorable>(
        _ bytes: [UInt8], key: [UInt8], value: T, id: String, sequence: Int64, schema: TypeSchema
    ) {
        let (logger, tier, notes) = (local.logger, self.tier, core.accessNotes)
        core.writer.queueForNextCommit(
            { context in
                let isCurrent = tier.state.withLock { state -> Bool in
                    guard state.phase == .live, let applied = state.appliedSeq else { return false }
                    return applied <= sequence
                        || !state.recentChanges.mayHaveChanged(type: schema.name, id: id, after: sequence)
                }
                guard isCurrent else { return }
                // Larger than this instance's byte limit (written under wider limits elsewhere): served, not kept,
                // so that keeping it evicts nothing.
                let size = bytes.withUnsafeBytes { RecordWriter.payloadSize(of: $0) }
                guard !RecordWriter.isTooLargeToKeep(size, schema: schema, context: context) else { return }
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
                context.filled[schema.number, default: []].insert(key)
                // A use, as a local hit is: this commit's eviction folds it.
                if schema.tracksRecency { key.withUnsafeBytes { notes.note(type: schema.number, key: $0) } }
                tier.keepRollbackPoint(in: context)
                tier.state.withLock { $0.noteLocalAhead(type: schema.name, id: id, at: sequence, byFill: true) }
            },
            finish: { error in
                guard let error else { return }
                // Not kept (the note went with the transaction): the changes of the record apply to whatever this
                // store holds of it.
                logger?.log(
                    level: .warning, message: "Could not keep a record read from the shared tier",
                    metadata: ["type": schema.name, "error": "\(LocalStorageError.wrapping(error))"])
            })
    }

    /// A local miss of `metadata`: the header as the shared tier holds it.
    private func metadataFromServer<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema
    ) async throws -> StorageMetadata? {
        guard let bytes = try await tier.record(type: schema.name, id: key) else { return nil }
        let now = core.clock.wallNanoseconds()
        return try bytes.withUnsafeBytes { buffer in
            let view = try RecordDecoding.view(of: buffer, T.self, id: id, fixedPartOnly: true, sharedTier: true)
            return StorageMetadata(
                createdAt: EpochNanoseconds.date(fromNanoseconds: view.createdAt),
                updatedAt: EpochNanoseconds.date(fromNanoseconds: view.updatedAt),
                expiresAt: view.expiresAt == 0 ? nil : EpochNanoseconds.date(fromNanoseconds: view.expiresAt),
                sizeInBytes: view.payload.count, isExpired: view.isExpired(at: now), version: view.version)
        }
    }

    /// The live record `id` as the shared tier holds it, with its bytes; nil when absent or expired.
    func sharedRecord<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema, now: Int64
    ) async throws -> (value: T, bytes: [UInt8], expiresAt: Int64)? {
        guard let bytes = try await tier.record(type: schema.name, id: key) else { return nil }
        let session = local.makeDecodeSession(for: schema)
        return try bytes.withUnsafeBytes { buffer -> (value: T, bytes: [UInt8], expiresAt: Int64)? in
            let view = try RecordDecoding.view(of: buffer, T.self, id: id, sharedTier: true)
            guard !view.isExpired(at: now) else { return nil }
            return (try RecordDecoding.decode(T.self, view: view, id: id, session: session), bytes, view.expiresAt)
        }
    }
}
