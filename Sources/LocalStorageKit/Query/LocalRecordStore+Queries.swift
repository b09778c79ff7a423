/// The local store's queries (``RecordStore``): plans run by ``QueryRunner`` in one snapshot, after the
/// migrations and the re-indexing a type may need first; only the rows returned are decoded.
extension LocalRecordStore {
    /// What a `.shared` query says without a shared tier.
    static let noSharedTier = LocalStorageError.invalidQuery(
        "scope .shared needs a shared tier (LocalStorageConfiguration.sharedTier)")

    /// A query of `fetch(_:matching:orderedBy:options:)` and `fetch(_:options:)`: a listing without indexes,
    /// else the indexed read after pending migrations.
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, options: FetchOptions, schema: TypeSchema
    ) async throws -> [T] {
        guard options.scope == .local else { throw Self.noSharedTier }
        guard QueryRunner.usesIndexes(plan) else {
            let items = try list(T.self, options: options, schema: schema)
            try await buildUpdateOrderIfWanted(schema)
            return items
        }
        try await migrateIfPending(T.self, schema: schema)
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        let (items, expired) = try await readIndexed(T.self, schema: schema) { txn in
            try QueryRunner.fetch(
                T.self, plan: plan, options: options, schema: schema, now: now, txn: txn,
                session: session)
        }
        afterRead(session: session, expired: expired, purge: options.purgeExpired, schema: schema)
        try await buildUpdateOrderIfWanted(schema)
        return items
    }

    /// The listing of `fetch(_:options:)`: live records in `options.sort` order, paged.
    private func list<T: LocalStorable>(_ type: T.Type, options: FetchOptions, schema: TypeSchema) throws -> [T] {
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        let (items, expired) = try core.environment.read { txn in
            try RecordReader.list(T.self, schema: schema, options: options, now: now, txn: txn, session: session)
        }
        afterRead(session: session, expired: expired, purge: options.purgeExpired, schema: schema)
        return items
    }

    /// The count of `count(_:matching:)`, after pending migrations. Decodes nothing.
    nonisolated(nonsending) func count<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, scope: FetchOptions.Scope?, schema: TypeSchema
    ) async throws -> Int {
        guard scope != .shared else { throw Self.noSharedTier }
        try await migrateIfPending(T.self, schema: schema)
        let now = core.clock.wallNanoseconds()
        return try await readIndexed(T.self, schema: schema) { txn in
            try QueryRunner.count(plan: plan, schema: schema, now: now, txn: txn)
        }
    }

    /// A page of `page(_:matching:orderedBy:page:pageSize:)`: items and totals from one snapshot.
    nonisolated(nonsending) func page<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, page: Int, pageSize: Int, options: FetchOptions, schema: TypeSchema
    ) async throws -> StoragePage<T> {
        guard options.scope == .local else { throw Self.noSharedTier }
        try await migrateIfPending(T.self, schema: schema)
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        let result = try await readIndexed(T.self, schema: schema) { txn in
            try QueryRunner.page(
                T.self, plan: plan, page: page, pageSize: pageSize, sort: options.sort, schema: schema, now: now,
                txn: txn, session: session)
        }
        afterRead(session: session, expired: [], purge: false, schema: schema)
        try await buildUpdateOrderIfWanted(schema)
        return result
    }

    /// Builds the type's update order (``UpdateOrder``) on the writer after a read that sorted the type's headers
    /// for want of it (this query's, or a read transaction's before it): once, O(records), so that the next
    /// queries sorted by update time walk it. A store that cannot write it (opened read-only, or whose map is full)
    /// goes on sorting the headers; after a full map, the build is tried again no sooner than
    /// ``updateOrderRetryInterval`` later (each try reads every header), by which time deletes may have made room.
    nonisolated(nonsending) func buildUpdateOrderIfWanted(_ schema: TypeSchema) async throws {
        let runtime = schema.runtime
        // Asked after every query sorted by update time: one atomic load when nothing is wanted.
        guard runtime.updateOrderWanted.load(ordering: .relaxed), !core.environment.isReadOnly else { return }
        let now = core.clock.uptime()
        if let failed = runtime.updateOrderDidNotFitAt.withLock({ $0 }), now - failed < Self.updateOrderRetryInterval {
            return
        }
        runtime.updateOrderWanted.store(false, ordering: .relaxed)
        let built: Bool
        do {
            built = try await core.writer.perform { context in try UpdateOrder.keep(schema, context: context) }
        } catch LocalStorageError.storageFull {
            built = false
        } catch {
            // The query has its rows; the build is tried again at the next one.
            runtime.updateOrderWanted.store(true, ordering: .relaxed)
            core.logger?.log(
                level: .warning, message: "Building the update order of \(schema.name) failed: \(error)", metadata: [:])
            return
        }
        runtime.updateOrderDidNotFitAt.withLock { $0 = built ? nil : now }
        if !built {
            runtime.updateOrderWanted.store(true, ordering: .relaxed)
            core.logger?.log(
                level: .warning,
                message: "The store is full: queries of \(schema.name) by update time sort its records until its "
                    + "update order fits (tried again in a minute at the soonest)",
                metadata: [:])
        }
    }

    /// How long after a build of an update order met a full map the next query may try again.
    static let updateOrderRetryInterval = Duration.seconds(60)

    /// Runs an indexed read in one snapshot, after re-indexing the records of `T` that another declaration
    /// of the type indexed (an older or newer app version, or another process's type of the same name).
    ///
    /// The check is O(log n) and runs inside the same snapshot as `body`, so a record another process
    /// wrote with another declaration just before is re-indexed too. After a re-index that left records it
    /// could not re-index (logged: damaged, stored by a newer version, not decodable as `T`), the read throws
    /// `decodingFailed` naming the first of them instead of answering without them. Should another declaration
    /// write stale records again between each re-index and the read (two processes writing all the time),
    /// the last round re-indexes and reads in one write transaction, where nothing comes between.
    nonisolated(nonsending) func readIndexed<T: LocalStorable, R: Sendable>(
        _ type: T.Type, schema: TypeSchema,
        _ body: @escaping (Transaction) throws -> R
    ) async throws -> R {
        var attempts = 0
        while true {
            let outcome: IndexedRead<R> = try core.environment.read { txn in
                if try Reindexer<T>.hasStaleRecords(schema: schema, txn: txn),
                    try schema.runtime.reindexFirst(at: txn.id, mayRetry: attempts < 3)
                {
                    return .stale
                }
                return .done(try body(txn))
            }
            switch outcome {
            case .done(let result):
                return result
            case .stale:
                attempts += 1
                guard attempts < Self.reindexRounds else {
                    let reindexer = Reindexer<T>(logger: core.logger)
                    return try await core.writer.performExclusive { writer in
                        try writer.transact { context in
                            let outcome = try reindexer.reindexAll(schema: schema, context: context)
                            if let problem = outcome.firstProblem { throw problem }
                            return try body(context.txn)
                        }
                    }
                }
                try await reindex(T.self, schema: schema)
                if let hook = core.afterReindex.withLock({ $0 }) { try await hook() }
            }
        }
    }

    /// How many times an indexed read re-indexes on the writer and reads again before it re-indexes and reads in
    /// one write transaction.
    static let reindexRounds = 3

    /// Re-indexes the stale records of `T` on the writer thread.
    func reindex<T: LocalStorable>(_ type: T.Type, schema: TypeSchema) async throws {
        let reindexer = Reindexer<T>(logger: core.logger)
        let environment = core.environment
        try await core.writer.performExclusive { writer in
            let outcome = try reindexer.run(schema: schema, writer: writer)
            schema.runtime.noteReindex(outcome, at: environment.lastTransactionID)
        }
    }
}

private enum IndexedRead<R> {
    case stale
    case done(R)
}
