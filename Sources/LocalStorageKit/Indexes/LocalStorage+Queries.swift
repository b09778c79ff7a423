extension LocalStorage {
    /// Records of `T` matching every filter, in `orderedBy` order (or `options.sort` without one).
    ///
    /// ```swift
    /// let admins = try await storage.fetch(
    ///     User.self,
    ///     matching: [.equals("role", "admin"), .atLeast("age", 18)],
    ///     orderedBy: .descending("lastSeen"),
    ///     options: FetchOptions(limit: 20)
    /// )
    /// ```
    /// Runs inside the store on index keys and record headers; only the rows returned are decoded.
    /// - Throws: `unknownIndex` for an index `T` does not declare, `invalidQuery` for a value of the wrong
    ///   kind or NaN, `decodingFailed` for a returned row that does not decode.
    public func fetch<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], orderedBy sort: StorageIndexSort? = nil,
        options: FetchOptions = FetchOptions()
    ) async throws -> [T] {
        try await operation("fetch(matching:)") {
            let options = try options.validated()
            let schema = try await core.schema(for: T.self)
            let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
            if plan.constraints.isEmpty && plan.sortIndex == nil {
                return try await fetch(T.self, options: options)
            }
            try await migrateIfPending(T.self, schema: schema)
            let now = Clock.now()
            let session = makeDecodeSession(for: schema)
            let (items, expired) = try await readIndexed(T.self, schema: schema) { txn in
                let executor = try QueryExecutor(schema: schema, plan: plan, txn: txn, now: now)
                let items = try executor.orderedIDs(options: options).compactMap { key in
                    try decodeRow(T.self, key: key, executor: executor, session: session)
                }
                return (items, Array(executor.expired))
            }
            writeBack(session, schema: schema)
            if !expired.isEmpty && (options.purgeExpired || configuration.autoPurgeExpiredOnRead) {
                purge(keys: expired, schema: schema)
            }
            return items
        }
    }

    /// The number of live records of `T` matching every filter. Decodes nothing.
    ///
    /// - Throws: `unknownIndex`, `invalidQuery`.
    public func count<T: LocalStorable>(_ type: T.Type, matching filters: [StorageIndexFilter]) async throws -> Int {
        try await operation("count(matching:)") {
            let schema = try await core.schema(for: T.self)
            let plan = try QueryPlan(filters: filters, sort: nil, schema: schema)
            try await migrateIfPending(T.self, schema: schema)
            let now = Clock.now()
            return try await readIndexed(T.self, schema: schema) { txn in
                try QueryExecutor(schema: schema, plan: plan, txn: txn, now: now).count()
            }
        }
    }

    /// One page of the records of `T` matching every filter, with the totals to page on.
    ///
    /// Pages count from 1. A page past the end has no items but true totals; nothing matching gives
    /// `totalPages == 0`. Items and totals come from one consistent snapshot.
    /// - Throws: `invalidQuery` when `page` or `pageSize` is below 1; `unknownIndex`.
    public func page<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
        page: Int, pageSize: Int
    ) async throws -> StoragePage<T> {
        try await operation("page") {
            guard page >= 1 else { throw LocalStorageError.invalidQuery("pages count from 1 (got \(page))") }
            guard pageSize >= 1 else {
                throw LocalStorageError.invalidQuery("pageSize must be at least 1 (got \(pageSize))")
            }
            let schema = try await core.schema(for: T.self)
            let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
            let (offset, overflow) = (page - 1).multipliedReportingOverflow(by: pageSize)
            let options = FetchOptions(limit: overflow ? 0 : pageSize, offset: overflow ? 0 : offset)
            try await migrateIfPending(T.self, schema: schema)
            let now = Clock.now()
            let session = makeDecodeSession(for: schema)
            let result = try await readIndexed(T.self, schema: schema) { txn in
                let executor = try QueryExecutor(schema: schema, plan: plan, txn: txn, now: now)
                let total: Int
                let ids: [[UInt8]]
                if !overflow, let walked = try executor.pageInOneWalk(options: options) {
                    (total, ids) = walked
                } else {
                    total = try executor.count()
                    ids = overflow || offset >= total ? [] : try executor.orderedIDs(options: options)
                }
                let items = try ids.compactMap { key in
                    try decodeRow(T.self, key: key, executor: executor, session: session)
                }
                return StoragePage(items: items, page: page, pageSize: pageSize, totalCount: total)
            }
            writeBack(session, schema: schema)
            return result
        }
    }

    /// Decodes one returned row (the record is read again by id; rows are few).
    private func decodeRow<T: LocalStorable>(_ type: T.Type, key: [UInt8], executor: QueryExecutor,
                                             session: DecodeSession) throws -> T? {
        try key.withUnsafeBytes { id in
            guard let bytes = try executor.txn.get(executor.schema.records, key: id) else { return nil }
            return try session.decodeRow(T.self, bytes: bytes, id: id)
        }
    }
}

extension LocalRepository {
    /// Records matching every filter, in `orderedBy` order (or `options.sort` without one).
    public func fetch(matching filters: [StorageIndexFilter], orderedBy sort: StorageIndexSort? = nil,
                      options: FetchOptions = FetchOptions()) async throws -> [T] {
        try await storage.fetch(T.self, matching: filters, orderedBy: sort, options: options)
    }

    /// The number of live records matching every filter.
    public func count(matching filters: [StorageIndexFilter]) async throws -> Int {
        try await storage.count(T.self, matching: filters)
    }

    /// One page of the records matching every filter.
    public func page(matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
                     page: Int, pageSize: Int) async throws -> StoragePage<T> {
        try await storage.page(T.self, matching: filters, orderedBy: sort, page: page, pageSize: pageSize)
    }
}
