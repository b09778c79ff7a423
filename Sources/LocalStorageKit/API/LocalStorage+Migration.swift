extension LocalStorage {
    /// Upgrades every stored record of `T` older than its `currentVersion`, in bounded write batches.
    ///
    /// For apps that want migration done at launch instead of record by record on read. Records that
    /// are already current are not touched.
    /// - Returns: the number of records upgraded.
    /// - Throws: `migrationFailed` at the first record whose chain fails; the batch it was in is left
    ///   as it was, earlier batches stay upgraded.
    @discardableResult
    public func migrateAll<T: LocalStorable>(
        _ type: T.Type, progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) async throws -> Int {
        try await operation("migrateAll") {
            let schema = try await core.schema(for: T.self)
            return try await local.migrateAll(T.self, schema: schema, progress: progress)
        }
    }
}
