/// The migration passes: every stored record of a type older than its current version upgraded in bounded
/// write batches, on request (`migrateAll(_:progress:)`) or before the first indexed read of a type whose
/// version moved, so that the read sees migrated index values. (A read migrates the records it meets in
/// memory: ``RecordDecoding``, ``DecodeSession``.)
extension LocalRecordStore {
    /// Upgrades every stored record of `T` older than its current version; stops at the first record whose
    /// chain fails (its batch is left as it was). Returns how many were upgraded.
    func migrateAll<T: LocalStorable>(
        _ type: T.Type, schema: TypeSchema, progress: (@Sendable (MigrationProgress) -> Void)?
    ) async throws -> Int {
        let (migrated, _) = try await runMigration(T.self, schema: schema, stopOnFailure: true, progress: progress)
        try await core.markMigrated(schema: schema)
        return migrated
    }

    /// Migrates every old record before the first indexed query of a type whose version moved, so the
    /// query sees migrated index values. Records whose chain fails (or whose upgraded value does not encode)
    /// are logged and left as they were; then the store's version of the type stays where it was, so that the
    /// next launch (an app whose fixed step keeps the version) tries them again, and this process does not
    /// run the pass again before every query.
    /// Runs on the caller's executor (a query from `@MainActor` stays there when nothing is pending).
    nonisolated(nonsending) func migrateIfPending<T: LocalStorable>(_ type: T.Type, schema: TypeSchema) async throws {
        guard core.isMigrationPending(schema.name) else { return }
        let (_, leftBehind) = try await runMigration(T.self, schema: schema, stopOnFailure: false, progress: nil)
        if leftBehind == 0 {
            try await core.markMigrated(schema: schema)
        } else {
            core.endMigrationPass(of: schema)
        }
    }

    /// The pass of ``migrateIfPending(_:schema:)`` inside a write transaction (an indexed query of
    /// `write { }`): every old record of `T` upgraded in `context`'s own transaction, and the type marked
    /// migrated when that commits (its store version moved in the same transaction when none was left behind).
    static func migrateIfPending<T: LocalStorable>(
        _ type: T.Type, schema: TypeSchema, core: StoreCore, format: PayloadFormat, logger: (any StorageLogger)?,
        context: CommitQueue.Context
    ) throws {
        guard core.isMigrationPending(schema.name) else { return }
        var after: [UInt8]?
        var leftBehind = 0
        while true {
            let batch = try migrateBatch(
                T.self, schema: schema, after: after, format: format, stopOnFailure: false, logger: logger,
                context: context)
            leftBehind += batch.leftBehind
            after = batch.last
            if batch.seen < 500 { break }
        }
        try core.markMigrated(schema: schema, leftBehind: leftBehind, in: context)
    }

    private func runMigration<T: LocalStorable>(
        _ type: T.Type, schema: TypeSchema, stopOnFailure: Bool,
        progress: (@Sendable (MigrationProgress) -> Void)?
    ) async throws -> (migrated: Int, leftBehind: Int) {
        let format = self.format
        let logger = self.logger
        return try await core.writer.performExclusive { writer in
            let total = try writer.transact { try $0.txn.entryCount(schema.records) }
            var after: [UInt8]?
            var processed = 0
            var migrated = 0
            var leftBehind = 0
            while true {
                let (seen, upgraded, left, last) = try writer.transact { context in
                    try LocalRecordStore.migrateBatch(
                        T.self, schema: schema, after: after, format: format,
                        stopOnFailure: stopOnFailure, logger: logger, context: context)
                }
                processed += seen
                migrated += upgraded
                leftBehind += left
                after = last
                progress?(MigrationProgress(processed: processed, total: total, migrated: migrated))
                if seen < 500 { break }
            }
            if migrated > 0 {
                logger?.log(
                    level: .info, message: "Migrated \(migrated) records of \(schema.name)",
                    metadata: ["type": schema.name, "version": "\(T.storageVersion)"])
            }
            return (migrated, leftBehind)
        }
    }

    /// Upgrades the old records among the next 500 after `after`: how many it saw, upgraded and left at an
    /// older version (their chain failed, or the upgraded value did not encode), and the last key it saw.
    private static func migrateBatch<T: LocalStorable>(
        _ type: T.Type, schema: TypeSchema, after: [UInt8]?, format: PayloadFormat, stopOnFailure: Bool,
        logger: (any StorageLogger)?, context: CommitQueue.Context
    ) throws -> (seen: Int, migrated: Int, leftBehind: Int, last: [UInt8]?) {
        let txn = context.txn
        var keys: [[UInt8]] = []
        try txn.withCursor(schema.records) { cursor in
            var entry = try cursor.seek(atLeast: after ?? [])
            if let current = entry, let after, current.key.elementsEqual(after) { entry = try cursor.move(.next) }
            while let current = entry, keys.count < 500 {
                keys.append(Array(current.key))
                entry = try cursor.move(.next)
            }
        }
        var migrated = 0
        var leftBehind = 0
        for key in keys {
            guard let bytes = try txn.get(schema.records, key: key) else { continue }
            let id = String(decoding: key, as: UTF8.self)
            do {
                // A damaged record fails here like one whose payload does not decode: logged (or thrown
                // with `stopOnFailure`) and left for `verify --repair`.
                let view = try StoredRecord(bytes).readable(type: schema.name, id: id)
                guard view.version < T.storageVersion else { continue }
                let session = DecodeSession(
                    counter: nil, format: format, sealing: schema.sealing, indexing: schema.runtime)
                _ = try RecordDecoding.decode(T.self, view: view, id: id, session: session)
                for upgrade in session.upgrades { try RecordWriter.apply(upgrade, schema: schema, context: context) }
                migrated += session.upgrades.count
                // No upgrade from a record that needed one: its upgraded value did not encode (logged).
                if session.upgrades.isEmpty { leftBehind += 1 }
            } catch let error as LMDBError {
                throw error
            } catch {
                if stopOnFailure { throw error }
                leftBehind += 1
                logger?.log(
                    level: .warning, message: "Could not migrate a record; it is left as it was",
                    metadata: ["type": schema.name, "id": id, "error": "\(error)"])
            }
        }
        return (keys.count, migrated, leftBehind, keys.last)
    }
}
