/// Queries through the shared tier: `.shared` ones run on the server (``SharedTierQuery``), `.local` ones on
/// the tiers below once local records may be served. Loads through the cache write through the server too.
extension SharedTierRecordStore {
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, options: FetchOptions, schema: TypeSchema
    ) async throws -> [T] {
        guard options.runsOnSharedTier else {
            try await tier.awaitSettled()
            return try await base.fetch(T.self, plan: plan, options: options, schema: schema)
        }
        return try await SharedTierQuery(tier: tier, schema: schema, plan: plan)
            .fetch(T.self, options: options, session: local.makeDecodeSession(for: schema))
    }

    /// `.shared`: in O(log n) per range with `ZLEXCOUNT`.
    nonisolated(nonsending) func count<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, scope: FetchOptions.Scope?, schema: TypeSchema
    ) async throws -> Int {
        guard scope != .local else {
            try await tier.awaitSettled()
            return try await base.count(T.self, plan: plan, scope: scope, schema: schema)
        }
        return try await SharedTierQuery(tier: tier, schema: schema, plan: plan).count()
    }

    nonisolated(nonsending) func page<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, page: Int, pageSize: Int, options: FetchOptions, schema: TypeSchema
    ) async throws -> StoragePage<T> {
        guard options.runsOnSharedTier else {
            try await tier.awaitSettled()
            return try await base.page(
                T.self, plan: plan, page: page, pageSize: pageSize, options: options, schema: schema)
        }
        let query = SharedTierQuery(tier: tier, schema: schema, plan: plan)
        let total = try await query.count()
        let (offset, overflow) = (page - 1).multipliedReportingOverflow(by: pageSize)
        var pageOptions = options
        pageOptions.offset = overflow ? Int.max : offset
        pageOptions.limit = pageSize
        let items =
            offset >= total || overflow
            ? []
            : try await query.fetch(T.self, options: pageOptions, session: local.makeDecodeSession(for: schema))
        return StoragePage(items: items, page: page, pageSize: pageSize, totalCount: total)
    }

    func checkTransaction(writes: Bool) throws {
        throw LocalStorageError.sharedTierUnavailable(
            writes ? Self.writeTransactionsNotShared : Self.readTransactionsNotShared)
    }

    var memoryCounts: (hits: Int, misses: Int) { base.memoryCounts }
}
