/// Queries, loads and capabilities of the local store: every query is the public layer's `locally`, and
/// nothing is above the store.
extension LocalRecordStore {
    /// What a `.shared` query says without a shared tier.
    static let noSharedTier = LocalStorageError.invalidQuery(
        "scope .shared needs a shared tier (LocalStorageConfiguration.sharedTier)")

    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, options: FetchOptions, schema: TypeSchema,
        locally: nonisolated(nonsending) () async throws -> [T]
    ) async throws -> [T] {
        guard options.scope == .local else { throw Self.noSharedTier }
        return try await locally()
    }

    nonisolated(nonsending) func count(
        plan: QueryPlan, scope: FetchOptions.Scope, schema: TypeSchema,
        locally: nonisolated(nonsending) () async throws -> Int
    ) async throws -> Int {
        guard scope == .local else { throw Self.noSharedTier }
        return try await locally()
    }

    nonisolated(nonsending) func page<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, page: Int, pageSize: Int, options: FetchOptions, schema: TypeSchema,
        locally: nonisolated(nonsending) () async throws -> StoragePage<T>
    ) async throws -> StoragePage<T> {
        guard options.scope == .local else { throw Self.noSharedTier }
        return try await locally()
    }

    nonisolated(nonsending) func fetchBeforeLoading<T: LocalStorable>(
        _ type: T.Type, id: String, schema: TypeSchema
    ) async throws -> T? {
        nil
    }

    func saveLoaded(_ record: PreparedRecord, expiration: CacheExpiration, schema: TypeSchema) async throws -> Bool {
        false
    }

    func checkWriteTransaction() throws {}

    var memoryCounts: (hits: Int, misses: Int) { (0, 0) }
}
