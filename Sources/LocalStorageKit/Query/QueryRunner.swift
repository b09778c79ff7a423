/// Runs indexed reads inside one transaction, on index keys and record headers: the rules the public
/// API and transactions share. Only returned rows are decoded.
enum QueryRunner {
    /// Whether a query needs index entries that are up to date with `schema`'s declaration (and migrated
    /// values) before it runs: every query but one with no condition and no index order.
    static func usesIndexes(_ plan: QueryPlan) -> Bool { !plan.isUnconstrained }

    /// Rows matching `plan` in its order, from `options.offset`, at most `options.limit`; and the keys of
    /// expired records the walk met.
    static func fetch<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, options: FetchOptions, schema: TypeSchema,
        now: Int64, txn: Transaction,
        session: DecodeSession
    ) throws -> (items: [T], expired: [[UInt8]]) {
        if plan.isUnconstrained {
            return try RecordReader.list(
                T.self, schema: schema, options: options, now: now, txn: txn,
                session: session)
        }
        let executor = try QueryExecutor(schema: schema, plan: plan, txn: txn, now: now)
        let ids = try executor.orderedIDs(options: options)
        let items = try decodeRows(T.self, ids: ids, executor: executor, session: session)
        return (items, Array(executor.expired))
    }

    /// The number of live records matching `plan`. Decodes nothing.
    static func count(plan: QueryPlan, schema: TypeSchema, now: Int64, txn: Transaction) throws -> Int {
        try QueryExecutor(schema: schema, plan: plan, txn: txn, now: now).count()
    }

    /// One page of the rows matching `plan`, with the totals, from one snapshot.
    ///
    /// - Throws: `invalidQuery` when `page` or `pageSize` is below 1.
    static func page<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, page: Int, pageSize: Int, sort: FetchOptions.Sort = .id,
        schema: TypeSchema, now: Int64, txn: Transaction,
        session: DecodeSession
    ) throws -> StoragePage<T> {
        try validate(page: page, pageSize: pageSize)
        let (offset, overflow) = (page - 1).multipliedReportingOverflow(by: pageSize)
        let options = FetchOptions(limit: overflow ? 0 : pageSize, offset: overflow ? 0 : offset, sort: sort)
        let executor = try QueryExecutor(schema: schema, plan: plan, txn: txn, now: now)
        let total: Int
        let ids: [[UInt8]]
        if !overflow, let walked = try executor.pageInOneWalk(options: options) {
            (total, ids) = walked
        } else {
            total = try executor.count()
            ids = overflow || offset >= total ? [] : try executor.orderedIDs(options: options)
        }
        let items = try decodeRows(T.self, ids: ids, executor: executor, session: session)
        return StoragePage(items: items, page: page, pageSize: pageSize, totalCount: total)
    }

    /// - Throws: `invalidQuery` when `page` or `pageSize` is below 1.
    static func validate(page: Int, pageSize: Int) throws(LocalStorageError) {
        guard page >= 1 else { throw .invalidQuery("pages count from 1 (got \(page))") }
        guard pageSize >= 1 else { throw .invalidQuery("pageSize must be at least 1 (got \(pageSize))") }
    }

    /// Decodes the returned rows (each record is read again by id; rows are few).
    ///
    /// One loop with no `T?` in it: a closure per row returning a `T?` would look up `Optional<T>`'s metadata
    /// in the runtime for every row (this code is not specialized).
    private static func decodeRows<T: LocalStorable>(
        _ type: T.Type, ids: [[UInt8]], executor: QueryExecutor, session: DecodeSession
    ) throws -> [T] {
        var items: [T] = []
        items.reserveCapacity(ids.count)
        for key in ids {
            // The bytes are the map's, valid for the transaction: they outlive the closure that found them.
            let stored = try key.withUnsafeBytes { id in try executor.txn.get(executor.schema.records, key: id) }
            guard let stored else { continue }
            items.append(try key.withUnsafeBytes { id in try session.decodeRow(T.self, bytes: stored, id: id) })
        }
        return items
    }
}

extension QueryPlan {
    /// No condition and no index order: the query is a plain listing in `options.sort` order.
    var isUnconstrained: Bool { constraints.isEmpty && sortIndex == nil }
}
