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

    func fetch<T: LocalStorable>(
        _ type: T.Type, id: T.ID, policy: LoadPolicy, schema: TypeSchema,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        try await LoadThrough(store: self, coordinator: nil).fetch(
            T.self, id: id, policy: policy, schema: schema, load: load)
    }

    func checkWriteTransaction() throws {}

    var memoryCounts: (hits: Int, misses: Int) { (0, 0) }
}
