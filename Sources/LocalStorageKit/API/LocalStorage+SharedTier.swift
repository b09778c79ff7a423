import Foundation

/// The operations of a store with a shared tier (``LocalStorageConfiguration/sharedTier``): writes go to the
/// server first, then commit locally; reads are local first and fill local misses from the server.
extension LocalStorage {
    /// The shared tier, for a query with `scope: .shared`.
    ///
    /// - Throws: `invalidQuery` when the store has none.
    func requireSharedTier() throws(LocalStorageError) -> SharedTier {
        guard let sharedTier else {
            throw .invalidQuery("scope .shared needs a shared tier (LocalStorageConfiguration.sharedTier)")
        }
        return sharedTier
    }
}

// MARK: - Queries on the shared tier

extension LocalStorage {
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
        guard options.scope == .shared else { return try await count(T.self, matching: filters) }
        return try await operation("count(matching:options:)") {
            let tier = try requireSharedTier()
            let schema = try await core.schema(for: T.self)
            let plan = try QueryPlan(filters: filters, sort: nil, schema: schema)
            return try await SharedTierQuery(tier: tier, schema: schema, plan: plan).count()
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
        guard options.scope == .shared else {
            return try await self.page(T.self, matching: filters, orderedBy: sort, page: page, pageSize: pageSize)
        }
        return try await operation("page(options:)") {
            try QueryRunner.validate(page: page, pageSize: pageSize)
            let tier = try requireSharedTier()
            let schema = try await core.schema(for: T.self)
            let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
            let query = SharedTierQuery(tier: tier, schema: schema, plan: plan)
            let total = try await query.count()
            let (offset, overflow) = (page - 1).multipliedReportingOverflow(by: pageSize)
            var pageOptions = options
            pageOptions.offset = overflow ? Int.max : offset
            pageOptions.limit = pageSize
            let items =
                offset >= total || overflow
                ? []
                : try await query.fetch(T.self, options: pageOptions, session: makeDecodeSession(for: schema))
            return StoragePage(items: items, page: page, pageSize: pageSize, totalCount: total)
        }
    }

    /// `fetch(_:matching:orderedBy:options:)` with `scope: .shared`.
    func fetchShared<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter],
        orderedBy sort: StorageIndexSort?, options: FetchOptions
    ) async throws -> [T] {
        let tier = try requireSharedTier()
        let options = try options.validated()
        let schema = try await core.schema(for: T.self)
        let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
        return try await SharedTierQuery(tier: tier, schema: schema, plan: plan)
            .fetch(T.self, options: options, session: makeDecodeSession(for: schema))
    }
}

extension LocalRepository {
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

extension LocalStorage {
    /// Why `write { }` throws on a store with a shared tier: its body runs inside a local transaction, which
    /// cannot wait for the server.
    static let writeTransactionsNotShared = SharedTierRecordStore.writeTransactionsNotShared
}
