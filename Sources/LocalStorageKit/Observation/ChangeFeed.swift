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
        var latest: [[UInt8]: (sequence: UInt64, kind: ChangeLog.Kind, inserted: Bool)] = [:]
        var cleared: UInt64?
        var read = token.sequence
        try changeLog.forEachEntry(after: token.sequence, in: txn) { entry in
            read = entry.sequence
            guard entry.type == schema.number else { return true }
            switch entry.kind {
            case .cleared:
                latest = [:]
                cleared = entry.sequence
            case .touched:
                break
            case .inserted, .updated, .deleted, .expired:
                let inserted = entry.kind == .inserted || (entry.kind == .updated && latest[entry.id]?.inserted == true)
                latest[entry.id] = (entry.sequence, entry.kind, inserted)
            }
            return true
        }
        var ordered: [(sequence: UInt64, change: StorageChange<T>)] = []
        if let cleared { ordered.append((cleared, .cleared)) }
        for (key, change) in latest {
            let id = String(decoding: key, as: UTF8.self)
            switch change.kind {
            case .deleted: ordered.append((change.sequence, .deleted(id: id)))
            case .expired: ordered.append((change.sequence, .expired(id: id)))
            case .inserted, .updated:
                var expired = false
                let found = try key.withUnsafeBytes { key in
                    try RecordReader.get(
                        T.self, key: key, id: id, schema: schema, now: now, txn: txn, session: session,
                        expired: &expired)
                }
                if let value = found {
                    ordered.append((change.sequence, change.inserted ? .inserted(value) : .updated(value)))
                } else if expired {
                    ordered.append((change.sequence, .expired(id: id)))
                }
            case .cleared, .touched:
                break
            }
        }
        ordered.sort { $0.sequence < $1.sequence }
        return (ordered.map(\.change), changeLog.token(read))
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
