/// A write transaction: the reads of ``StorageReadTransaction`` plus writes, valid only inside the
/// closure of ``LocalStorage/write(_:)`` that receives it.
///
/// ```swift
/// let left = try await storage.write { tx in
///     try tx.save(order, expiration: .days(30))
///     try tx.delete(Cart.self, id: order.cartID)
///     guard var stock = try tx.fetch(Stock.self, id: order.sku) else { throw ShopError.soldOut }
///     stock.count -= 1
///     try tx.save(stock)
///     return stock.count
/// }
/// ```
/// Reads see the transaction's own writes. Everything commits together when the closure returns, or
/// nothing does when it throws. Records a read migrates or finds expired are written back or purged in
/// the same transaction; an indexed query first upgrades the type's old records when its version moved
/// (as the store's own queries do) and re-indexes records another declaration of the type wrote, in the
/// same transaction too.
public final class StorageWriteTransaction: StorageReadTransaction {
    let context: CommitQueue.Context

    init(storage: LocalStorage, context: CommitQueue.Context) {
        self.context = context
        // Every schema ready now was opened before this transaction began: a registration in place cannot run
        // while a write transaction is open (``HandleOpeningLock``), and the writer's own run one after another.
        super.init(storage: storage, txn: context.txn, now: context.now, schemaGeneration: .max)
    }

    override func resolveSchema<T: LocalStorable>(_ type: T.Type) throws -> TypeSchema {
        try storage.core.schema(for: T.self, in: context)
    }

    override func prepareIndexedRead<T: LocalStorable>(_ type: T.Type, schema: TypeSchema) throws {
        try LocalRecordStore.migrateIfPending(
            T.self, schema: schema, core: storage.core, format: storage.local.format, logger: storage.logger,
            context: context)
        guard try Reindexer<T>.hasStaleRecords(schema: schema, txn: txn) else { return }
        let outcome = try Reindexer<T>(logger: storage.logger).reindexAll(schema: schema, context: context)
        // What the re-index left is missing from this declaration's indexes: say so, not fewer rows.
        if let problem = outcome.firstProblem { throw problem }
    }

    override func finish(_ session: DecodeSession, expired: [[UInt8]], purge: Bool, schema: TypeSchema) throws {
        for upgrade in session.upgrades { try RecordWriter.apply(upgrade, schema: schema, context: context) }
        guard !expired.isEmpty, purge || storage.configuration.autoPurgeExpiredOnRead else { return }
        try RecordWriter.purge(keys: expired, schema: schema, context: context, logger: storage.logger)
    }

    override func mapped(_ error: any Error) -> any Error {
        if let error = error as? LMDBError {
            if error.isMapFull {
                // The writer grows the map and runs the transaction again, whatever the closure does with this.
                context.metMapFull = true
            } else if context.storeError == nil {
                // The writer aborts this transaction, whatever the closure does with this.
                context.storeError = error
            }
        }
        return super.mapped(error)
    }

    /// Runs a write of many entries in a transaction nested in this one, so that one that throws part way (a
    /// record of a batch stored at a newer version, say) leaves nothing of itself behind when the closure
    /// catches its error and goes on. Reads in `body` go through the context it receives: the outer
    /// transaction may not be used while the nested one is open.
    func atomically<R>(_ body: (CommitQueue.Context) throws -> R) throws -> R {
        let inner = context.nested(try txn.beginNested())
        let result: R
        do {
            result = try body(inner)
        } catch {
            inner.txn.abortNested()
            throw error
        }
        // A failed commit ends the nested transaction itself (LMDB aborts it): it is not aborted again.
        try inner.txn.commitNested()
        context.absorb(inner)
        return result
    }

    // MARK: - Writes

    /// Saves `value`, replacing any record with its id (see ``LocalStorage/save(_:expiration:)``).
    public func save<T: LocalStorable>(_ value: T, expiration: CacheExpiration = .never) throws {
        try run {
            let schema = try schema(T.self)
            let record = try storage.prepare(value, schema: schema)
            try RecordWriter.put(
                record, expiresAt: try expiration.expiresAt(now: now), schema: schema, context: context)
        }
    }

    /// Saves every value; when the sequence repeats an id, the last value wins.
    public func save<T: LocalStorable, S: Sequence>(contentsOf values: S, expiration: CacheExpiration = .never) throws
    where S.Element == T {
        try run {
            let schema = try schema(T.self)
            let indexValues = schema.runtime.indexValueComputer(for: T.self)
            var records = try values.map { try storage.prepare($0, schema: schema, indexValues: indexValues) }
            guard !records.isEmpty else { return }
            RecordWriter.sortByKey(&records)
            let expiresAt = try expiration.expiresAt(now: now)
            try atomically { context in
                try RecordWriter.putAll(records, expiresAt: expiresAt, schema: schema, context: context)
            }
        }
    }

    /// Deletes the record with `id`; deleting a missing id does nothing.
    public func delete<T: LocalStorable>(_ type: T.Type, id: String) throws {
        try run {
            _ = try RecordWriter.delete(
                id: id, key: try RecordWriter.key(for: id), schema: try schema(T.self),
                context: context)
        }
    }

    /// Deletes the record whose id is `id`; a missing id does nothing.
    @_disfavoredOverload
    public func delete<T: LocalStorable>(_ type: T.Type, id: T.ID) throws {
        try delete(type, id: try StorageKey.string(for: id))
    }

    /// Deletes every record of `T` (emits one `.cleared` after the commit).
    public func deleteAll<T: LocalStorable>(_ type: T.Type) throws {
        try run {
            let schema = try schema(T.self)
            try atomically { context in try RecordWriter.clear(schema: schema, context: context) }
        }
    }

    /// Changes a record's time to live without rewriting its value.
    ///
    /// - Throws: `notFound(id:)` when the record is absent or expired.
    public func setExpiration<T: LocalStorable>(_ type: T.Type, id: String, _ expiration: CacheExpiration) throws {
        try run {
            try RecordWriter.setExpiration(
                T.self, id: id, key: try RecordWriter.key(for: id), expiration,
                schema: try schema(T.self), context: context)
        }
    }

    /// Changes the time to live of the record whose id is `id`. - Throws: `notFound(id:)`.
    @_disfavoredOverload
    public func setExpiration<T: LocalStorable>(_ type: T.Type, id: T.ID, _ expiration: CacheExpiration) throws {
        try setExpiration(type, id: try StorageKey.string(for: id), expiration)
    }
}
