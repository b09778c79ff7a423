/// How far ``LocalStorage/migrateAll(_:progress:)`` has come.
public struct MigrationProgress: Sendable, Hashable {
    /// Records looked at so far.
    public let processed: Int
    /// Records of the type when the migration started.
    public let total: Int
    /// Records upgraded so far.
    public let migrated: Int
}
