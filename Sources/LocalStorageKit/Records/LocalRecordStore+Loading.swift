/// Loads and capabilities of the local store: nothing is above it.
extension LocalRecordStore {
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, id: T.ID, policy: LoadPolicy, schema: TypeSchema,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        try await LoadThrough(store: self, coordinator: nil).fetch(
            T.self, id: id, policy: policy, schema: schema, load: load)
    }

    func checkTransaction(writes: Bool) throws {}

    var memoryCounts: (hits: Int, misses: Int) { (0, 0) }
}
