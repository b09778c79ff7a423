extension LocalStorage {
    /// The store's position now in its change log, to read what changes after it later, even in another
    /// process or after a relaunch.
    ///
    /// ```swift
    /// let mark = try await storage.changeToken()
    /// // … later:
    /// let (changes, next) = try await storage.changes(of: User.self, since: mark)
    /// ```
    nonisolated(nonsending) public func changeToken() async throws -> StorageChangeToken {
        try await operation("changeToken") {
            let changeLog = core.changeLog
            return changeLog.token(try core.environment.read { txn in try changeLog.lastSequence(in: txn) })
        }
    }

    /// The changes to records of `T` committed after `token`, by any process, in commit order, and the
    /// position to read from next time.
    ///
    /// A record changed several times since `token` is reported once, with its latest state: an insert
    /// and updates come as one `.inserted` of the current value, anything followed by a delete as the
    /// `.deleted` alone, and a `.cleared` drops what came before it. A consumer that applies the changes in
    /// order therefore ends at the store's true state. Values are read from the store now. A record stored at a
    /// version of its type above this app's `currentVersion`, or whose migration fails
    /// (``LocalStorageError/migrationFailed(from:to:underlying:)``), is left out and logged as a warning, as the
    /// live ``changes(of:)`` stream leaves it out, so the feed goes on past it (after an app update that reads
    /// such records, reload in full: the feed does not bring them again). Any other record that does not decode
    /// (a model changed without a migration, a record a newer library wrote, damage) throws, as a fetch of it does.
    ///
    /// Complexity: O(changes since `token`, of every type) plus one read per changed record.
    /// - Throws: ``LocalStorageError/changeTokenExpired`` when the log no longer holds every change after
    ///   `token` (it keeps ``LocalStorageConfiguration/changeLogRetention``), or when `token` is not from
    ///   this store: reload in full and take a new token.
    nonisolated(nonsending) public func changes<T: LocalStorable>(
        of type: T.Type, since token: StorageChangeToken
    ) async throws
        -> (changes: [StorageChange<T>], next: StorageChangeToken)
    {
        try await operation("changes(of:since:)") {
            let schema = try await core.schema(for: T.self)
            return try local.changes(of: T.self, since: token, schema: schema)
        }
    }
}

extension LocalRepository {
    /// The store's position now in its change log (see ``LocalStorage/changeToken()``).
    nonisolated(nonsending) public func changeToken() async throws -> StorageChangeToken {
        try await storage.changeToken()
    }

    /// The changes to records of `T` committed after `token` (see ``LocalStorage/changes(of:since:)``).
    nonisolated(nonsending) public func changes(
        since token: StorageChangeToken
    ) async throws
        -> (changes: [StorageChange<T>], next: StorageChangeToken)
    {
        try await storage.changes(of: T.self, since: token)
    }
}
