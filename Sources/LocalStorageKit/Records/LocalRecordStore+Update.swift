extension LocalRecordStore {
    /// `update` in one write transaction: reads the record, runs `mutate` once (a replay of the transaction,
    /// after the map grew, reuses its result) and writes the result with the record's expiration.
    nonisolated(nonsending) func update<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema,
        _ mutate: @escaping @Sendable (inout T) throws -> Void
    ) async throws -> T {
        let format = self.format
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
                    session: DecodeSession(
                        counter: counter, format: format, sealing: schema.sealing, indexing: schema.runtime))
                do {
                    try mutate(&mutated)
                } catch {
                    throw CallerError(underlying: error)
                }
                let newID = try mutated.storageID()
                guard newID.utf8.elementsEqual(id.utf8) else {
                    throw LocalStorageError.invalidId("update must not change the id (\(id) → \(newID))")
                }
                record = PreparedRecord(
                    id: id, key: key, payload: try PayloadCodec.encode(mutated, as: format),
                    format: format, version: T.storageVersion,
                    indexValues: mutated.indexValues(in: schema), value: mutated)
                value = mutated
                memo.result = (Array(view.payload), view.version, record, mutated)
            }
            try RecordWriter.put(record, expiresAt: view.expiresAt, schema: schema, context: context)
            return value
        }
    }
}

/// What an `update`'s `mutate` made, kept for a replay of its transaction (after the map grew).
private final class UpdateMemo<T>: @unchecked Sendable {
    // @unchecked: only the writer thread touches it, inside the one request that owns it.
    var result: (payload: [UInt8], version: Int, record: PreparedRecord, value: T)?
}
