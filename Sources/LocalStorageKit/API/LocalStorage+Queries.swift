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
    nonisolated(nonsending) public func fetch<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], orderedBy sort: StorageIndexSort? = nil,
        options: FetchOptions = FetchOptions()
    ) async throws -> [T] {
        try await operation("fetch(matching:)") {
            if options.scope == .shared {
                return try await fetchShared(
                    T.self, matching: filters, orderedBy: sort,
                    options: options)
            }
            let options = try options.validated()
            let schema = try await core.schema(for: T.self)
            try await sharedTier?.awaitSettled()
            let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
            guard QueryRunner.usesIndexes(plan) else { return try await fetch(T.self, options: options) }
            try await migrateIfPending(T.self, schema: schema)
            let now = core.clock.wallNanoseconds()
            let session = makeDecodeSession(for: schema)
            let (items, expired) = try await readIndexed(T.self, schema: schema) { txn in
                try QueryRunner.fetch(
                    T.self, plan: plan, options: options, schema: schema, now: now, txn: txn,
                    session: session)
            }
            followUp(session: session, expired: expired, purge: options.purgeExpired, schema: schema)
            return items
        }
    }

    /// The number of live records of `T` matching every filter. Decodes nothing.
    ///
    /// - Throws: `unknownIndex`, `invalidQuery`.
    nonisolated(nonsending) public func count<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter]
    ) async throws -> Int {
        try await operation("count(matching:)") {
            let schema = try await core.schema(for: T.self)
            try await sharedTier?.awaitSettled()
            let plan = try QueryPlan(filters: filters, sort: nil, schema: schema)
            try await migrateIfPending(T.self, schema: schema)
            let now = core.clock.wallNanoseconds()
            return try await readIndexed(T.self, schema: schema) { txn in
                try QueryRunner.count(plan: plan, schema: schema, now: now, txn: txn)
            }
        }
    }

    /// One page of the records of `T` matching every filter, with the totals to page on.
    ///
    /// Pages count from 1. A page past the end has no items but true totals; nothing matching gives
    /// `totalPages == 0`. Items and totals come from one consistent snapshot.
    /// - Throws: `invalidQuery` when `page` or `pageSize` is below 1; `unknownIndex`.
    nonisolated(nonsending) public func page<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
        page: Int, pageSize: Int
    ) async throws -> StoragePage<T> {
        try await operation("page") {
            try QueryRunner.validate(page: page, pageSize: pageSize)
            let schema = try await core.schema(for: T.self)
            try await sharedTier?.awaitSettled()
            let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
            try await migrateIfPending(T.self, schema: schema)
            let now = core.clock.wallNanoseconds()
            let session = makeDecodeSession(for: schema)
            let result = try await readIndexed(T.self, schema: schema) { txn in
                try QueryRunner.page(
                    T.self, plan: plan, page: page, pageSize: pageSize, schema: schema, now: now,
                    txn: txn, session: session)
            }
            followUp(session: session, expired: [], purge: false, schema: schema)
            return result
        }
    }
}

extension LocalRepository {
    /// Records matching every filter, in `orderedBy` order (or `options.sort` without one).
    nonisolated(nonsending) public func fetch(
        matching filters: [StorageIndexFilter], orderedBy sort: StorageIndexSort? = nil,
        options: FetchOptions = FetchOptions()
    ) async throws -> [T] {
        try await storage.fetch(T.self, matching: filters, orderedBy: sort, options: options)
    }

    /// The number of live records matching every filter.
    nonisolated(nonsending) public func count(matching filters: [StorageIndexFilter]) async throws -> Int {
        try await storage.count(T.self, matching: filters)
    }

    /// One page of the records matching every filter.
    nonisolated(nonsending) public func page(
        matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
        page: Int, pageSize: Int
    ) async throws -> StoragePage<T> {
        try await storage.page(T.self, matching: filters, orderedBy: sort, page: page, pageSize: pageSize)
    }
}
