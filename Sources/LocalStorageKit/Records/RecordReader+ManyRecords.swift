/// `fetch(_:ids:)`'s reads: every id looked up in one snapshot, with nothing per id but the lookup and the
/// decode (string ids are taken as they are; no per-id result tuple or id conversion).
extension RecordReader {
    /// The live records among `ids` from one snapshot, keyed by id, and the keys of the expired ones met;
    /// each record found is a use of it (`session`'s ``DecodeSession/noteUse``).
    ///
    /// - Throws: `invalidId` for an id that cannot key a record; `decodingFailed`; `migrationFailed`.
    static func getMany<T: LocalStorable>(
        _ type: T.Type, ids: [T.ID], schema: TypeSchema, now: Int64, txn: Transaction, session: DecodeSession
    ) throws -> (found: [T.ID: T], expired: [[UInt8]]) {
        let names = try StorageKey.strings(for: ids)
        var found: [T.ID: T] = [:]
        found.reserveCapacity(ids.count)
        var expired: [[UInt8]] = []
        let records = schema.records
        for position in names.indices {
            var name = names[position]
            var value = try name.withUTF8 { utf8 -> T? in
                let key = UnsafeRawBufferPointer(utf8)
                try RecordWriter.validate(keyLength: key.count)
                guard let bytes = try txn.get(records, key: key) else { return nil }
                let view = try RecordDecoding.view(of: bytes, T.self, id: names[position], fixedPartOnly: true)
                if view.isExpired(at: now) {
                    expired.append(Array(key))
                    return nil
                }
                let value = try RecordDecoding.decode(T.self, view: view, id: names[position], session: session)
                session.noteUse?(key)
                return value
            }
            // Moved into the result (`take()`), not copied and then destroyed.
            if let value = value.take() { found.updateValue(value, forKey: ids[position]) }
        }
        return (found, expired)
    }
}
