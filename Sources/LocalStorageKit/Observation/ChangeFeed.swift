/// Reads the change log for ``LocalStorage/changes(of:since:)``.
enum ChangeFeed {
    static func read<T: LocalStorable>(
        _ type: T.Type, since token: StorageChangeToken, schema: TypeSchema, changeLog: ChangeLog, now: Int64,
        txn: Transaction, session: DecodeSession, logger: (any StorageLogger)?
    ) throws -> (changes: [StorageChange<T>], next: StorageChangeToken) {
        let last = try changeLog.lastSequence(in: txn)
        // A token more than `retention` changes old has expired, whether or not the log has trimmed them yet
        // (it trims in steps, a slack past the retention): the same answer at every moment of the trimming.
        guard token.store == changeLog.store, token.sequence >= (try changeLog.trimmedThrough(in: txn)),
            token.sequence <= last, last - token.sequence <= UInt64(changeLog.retention)
        else {
            throw LocalStorageError.changeTokenExpired
        }
        var entries: [ChangeLog.Entry] = []
        var read = token.sequence
        try changeLog.forEachEntry(after: token.sequence, in: txn) { entry in
            read = entry.sequence
            if entry.type == schema.number && entry.kind != .touched { entries.append(entry) }
            return true
        }
        // One change per record, its latest state; a clear hides what came before it, so only the last one is told.
        let lastClear = entries.last { $0.kind == .cleared }?.sequence
        var changes: [StorageChange<T>] = []
        for entry in ChangeLog.latestPerRecord(entries) {
            let id = String(decoding: entry.id, as: UTF8.self)
            switch entry.kind {
            case .cleared where entry.sequence == lastClear: changes.append(.cleared)
            case .cleared, .touched: break
            case .deleted: changes.append(.deleted(id: id))
            case .expired: changes.append(.expired(id: id))
            case .inserted, .updated:
                var expired = false
                let found: T?
                do {
                    found = try entry.id.withUnsafeBytes { key in
                        try RecordReader.get(
                            T.self, key: key, id: id, schema: schema, now: now, txn: txn, session: session,
                            expired: &expired)
                    }
                } catch let error as LocalStorageError {
                    guard
                        try isNewerOrUnmigrated(
                            error, key: entry.id, typeName: "\(T.self)", id: id, schema: schema, txn: txn,
                            session: session, currentVersion: T.storageVersion)
                    else { throw error }
                    // A record written by a newer version of the app (an extension updated first) or whose migration
                    // step throws is left out, as the live change stream leaves it out: throwing would stop the feed
                    // at it for good, since the caller has no token past it. Any other failure to read a record of
                    // this version (a model changed without a migration, a missing key) still throws (review-84 #4).
                    logger?.log(
                        level: .warning, message: "The change feed left out a record it could not read",
                        metadata: ["type": schema.name, "id": id, "error": "\(error)"])
                    continue
                }
                if let value = found {
                    changes.append(entry.kind == .inserted ? .inserted(value) : .updated(value))
                } else if expired {
                    changes.append(.expired(id: id))
                }
            }
        }
        return (changes, changeLog.token(read))
    }
}

extension LocalRecordStore {
    /// The changes to records of `T` committed after `token`, one per record with its latest state, read
    /// from one snapshot (``ChangeFeed``), and the position to read from next time.
    ///
    /// - Throws: `changeTokenExpired` when the log no longer holds every change after `token`, or when
    ///   `token` is not from this store.
    func changes<T: LocalStorable>(
        of type: T.Type, since token: StorageChangeToken, schema: TypeSchema
    ) throws -> (changes: [StorageChange<T>], next: StorageChangeToken) {
        let session = makeDecodeSession(for: schema)
        let now = core.clock.wallNanoseconds()
        let changeLog = core.changeLog
        let result = try core.environment.read { txn in
            try ChangeFeed.read(
                T.self, since: token, schema: schema, changeLog: changeLog, now: now, txn: txn, session: session,
                logger: logger)
        }
        afterRead(session: session, expired: [], purge: false, schema: schema)
        return result
    }
}

extension ChangeFeed {
    /// Whether `error`, from reading the record at `key`, says the record is of a version this app does not read: a
    /// `migrationFailed`, or a `decodingFailed` of a record stored above the app's current version.
    static func isNewerOrUnmigrated(
        _ error: LocalStorageError, key: [UInt8], typeName: String, id: String, schema: TypeSchema,
        txn: Transaction, session: DecodeSession, currentVersion: Int
    ) throws -> Bool {
        switch error {
        case .migrationFailed: return true
        case .decodingFailed:
            guard let bytes = try txn.get(schema.records, key: key) else { return false }
            let version = try RecordDecoding.view(of: bytes, typeName: typeName, id: id, fixedPartOnly: true).version
            return version > (session.currentVersion ?? currentVersion)
        default: return false
        }
    }
}
