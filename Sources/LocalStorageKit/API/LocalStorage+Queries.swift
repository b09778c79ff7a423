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
            let options = try options.validated()
            let schema = try await core.schema(for: T.self)
            let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
            return try await tiers.fetch(T.self, plan: plan, options: options, schema: schema) {
                try await query(T.self, plan: plan, options: options, schema: schema)
            }
        }
    }

    /// The number of live records of `T` matching every filter. Decodes nothing.
    ///
    /// - Throws: `unknownIndex`, `invalidQuery`.
    nonisolated(nonsending) public func count<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter]
    ) async throws -> Int {
        try await operation("count(matching:)") { try await scopedCount(T.self, matching: filters, scope: .local) }
    }

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
        try await operation("count(matching:options:)") {
            try await scopedCount(T.self, matching: filters, scope: options.scope)
        }
    }

    /// The body of both `count(_:matching:)` methods.
    private nonisolated(nonsending) func scopedCount<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], scope: FetchOptions.Scope
    ) async throws -> Int {
        let schema = try await core.schema(for: T.self)
        let plan = try QueryPlan(filters: filters, sort: nil, schema: schema)
        return try await tiers.count(plan: plan, scope: scope, schema: schema) {
            try await count(T.self, plan: plan, schema: schema)
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
            try await scopedPage(
                T.self, matching: filters, orderedBy: sort, page: page, pageSize: pageSize, options: FetchOptions())
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
        try await operation("page(options:)") {
            try await scopedPage(
                T.self, matching: filters, orderedBy: sort, page: page, pageSize: pageSize, options: options)
        }
    }

    /// The body of both `page` methods.
    private nonisolated(nonsending) func scopedPage<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], orderedBy sort: StorageIndexSort?,
        page: Int, pageSize: Int, options: FetchOptions
    ) async throws -> StoragePage<T> {
        try QueryRunner.validate(page: page, pageSize: pageSize)
        let schema = try await core.schema(for: T.self)
        let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
        return try await tiers.page(
            T.self, plan: plan, page: page, pageSize: pageSize, options: options, schema: schema
        ) {
            try await self.page(T.self, plan: plan, page: page, pageSize: pageSize, schema: schema)
        }
    }
}

// MARK: - The local store's queries

extension LocalStorage {
    /// The local query of `fetch(_:matching:orderedBy:options:)`: a listing without indexes, else the
    /// indexed read after pending migrations.
    nonisolated(nonsending) func query<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, options: FetchOptions, schema: TypeSchema
    ) async throws -> [T] {
        guard QueryRunner.usesIndexes(plan) else { return try list(T.self, options: options, schema: schema) }
        try await migrateIfPending(T.self, schema: schema)
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        let (items, expired) = try await readIndexed(T.self, schema: schema) { txn in
            try QueryRunner.fetch(
                T.self, plan: plan, options: options, schema: schema, now: now, txn: txn,
                session: session)
        }
        afterRead(session: session, expired: expired, purge: options.purgeExpired, schema: schema)
        return items
    }

    /// The local listing of `fetch(_:options:)`: live records in `options.sort` order, paged.
    func list<T: LocalStorable>(_ type: T.Type, options: FetchOptions, schema: TypeSchema) throws -> [T] {
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        let (items, expired) = try core.environment.read { txn in
            try RecordReader.list(T.self, schema: schema, options: options, now: now, txn: txn, session: session)
        }
        afterRead(session: session, expired: expired, purge: options.purgeExpired, schema: schema)
        return items
    }

    /// The local count of `count(_:matching:)`, after pending migrations.
    nonisolated(nonsending) func count<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, schema: TypeSchema
    ) async throws -> Int {
        try await migrateIfPending(T.self, schema: schema)
        let now = core.clock.wallNanoseconds()
        return try await readIndexed(T.self, schema: schema) { txn in
            try QueryRunner.count(plan: plan, schema: schema, now: now, txn: txn)
        }
    }

    /// The local page of `page(_:matching:orderedBy:page:pageSize:)`: items and totals from one snapshot.
    nonisolated(nonsending) func page<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, page: Int, pageSize: Int, schema: TypeSchema
    ) async throws -> StoragePage<T> {
        try await migrateIfPending(T.self, schema: schema)
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        let result = try await readIndexed(T.self, schema: schema) { txn in
            try QueryRunner.page(
                T.self, plan: plan, page: page, pageSize: pageSize, schema: schema, now: now,
                txn: txn, session: session)
        }
        afterRead(session: session, expired: [], purge: false, schema: schema)
        return result
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
