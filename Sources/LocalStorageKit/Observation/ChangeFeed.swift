/// Reads the change log for ``LocalStorage/changes(of:since:)``.
enum ChangeFeed {
    static func read<T: LocalStorable>(
        _ type: T.Type, since token: StorageChangeToken, schema: TypeSchema, changeLog: ChangeLog, now: Int64,
        txn: Transaction, session: DecodeSession
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
                let found = try entry.id.withUnsafeBytes { key in
                    try RecordReader.get(
                        T.self, key: key, id: id, schema: schema, now: now, txn: txn, session: session,
                        expired: &expired)
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
                T.self, since: token, schema: schema, changeLog: changeLog, now: now, txn: txn, session: session)
        }
        afterRead(session: session, expired: [], purge: false, schema: schema)
        return result
    }
}
