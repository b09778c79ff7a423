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
            return try await tiers.fetch(T.self, plan: plan, options: options, schema: schema)
        }
    }

    /// The number of live records of `T` matching every filter. Decodes nothing.
    ///
    /// - Throws: `unknownIndex`, `invalidQuery`.
    nonisolated(nonsending) public func count<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter]
    ) async throws -> Int {
        try await operation("count(matching:)") { try await scopedCount(T.self, matching: filters, scope: nil) }
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
            try await scopedCount(T.self, matching: filters, scope: options.requestedScope)
        }
    }

    /// The body of both `count(_:matching:)` methods.
    private nonisolated(nonsending) func scopedCount<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], scope: FetchOptions.Scope?
    ) async throws -> Int {
        let schema = try await core.schema(for: T.self)
        let plan = try QueryPlan(filters: filters, sort: nil, schema: schema)
        return try await tiers.count(T.self, plan: plan, scope: scope, schema: schema)
    }

    /// One page of the records of `T` matching every filter, with the totals to page on.
    ///
    /// Pages count from 1. A page past the end has no items but true totals; nothing matching gives
    /// `totalPages == 0`. Items and totals come from one consistent snapshot, the call's own: pages read in separate
    /// calls while other writers insert or delete can repeat or skip a record that did not change (pages are
    /// positions, not cursors); read them all inside one ``read(_:)`` transaction for one snapshot.
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
            T.self, plan: plan, page: page, pageSize: pageSize, options: options, schema: schema)
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
