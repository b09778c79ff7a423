/// Reads records inside a read transaction: listings by id or update time, counts, expiry sets.
enum RecordReader {
    /// The keys of records that expired by `now` but are not purged yet (walks only those).
    static func expiredKeys(schema: TypeSchema, now: Int64, txn: Transaction) throws -> Set<[UInt8]> {
        var keys = Set<[UInt8]>()
        try forEachExpired(schema: schema, now: now, txn: txn) { _, key in
            keys.insert(Array(key))
            return true
        }
        return keys
    }

    /// Calls `body` with (expiry-time key, record key) for each entry of the expiry database that is due
    /// by `now`, oldest first, until it returns false. Walks only what expired.
    static func forEachExpired(
        schema: TypeSchema, now: Int64, txn: Transaction,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try txn.withCursor(schema.expiry) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry, current.key.count == 8 {
                let expiresAt = Int64(bitPattern: UInt64(bigEndian: current.key.loadUnaligned(as: UInt64.self)))
                if expiresAt > now { break }
                if try !body(current.key, current.value) { return }
                entry = try cursor.move(.next)
            }
        }
    }

    /// The number of live records of a type: all entries minus the expired ones.
    static func count(schema: TypeSchema, now: Int64, txn: Transaction) throws -> Int {
        let total = try txn.entryCount(schema.records)
        let expired = try expiredKeys(schema: schema, now: now, txn: txn).count
        return max(0, total - expired)
    }

    /// Lists live records in `options.sort` order, decoding only the rows returned.
    /// Returns the rows and the keys of expired records it met.
    static func list<T: LocalStorable>(
        _ type: T.Type, schema: TypeSchema, options: FetchOptions, now: Int64, txn: Transaction,
        session: DecodeSession
    ) throws -> (items: [T], expired: [[UInt8]]) {
        var items: [T] = []
        var expiredMet: [[UInt8]] = []
        let end = options.end
        guard end > 0, options.limit != 0 else { return ([], []) }
        var position = 0
        switch options.sort {
        case .id:
            try txn.withCursor(schema.records) { cursor in
                var entry = try cursor.move(.first)
                while let current = entry, position < end {
                    let view = try RecordDecoding.view(
                        of: current.value, T.self, id: String(decoding: current.key, as: UTF8.self),
                        fixedPartOnly: true)
                    if view.isExpired(at: now) {
                        expiredMet.append(Array(current.key))
                    } else {
                        if position >= options.offset {
                            items.append(try session.decodeRow(T.self, bytes: current.value, id: current.key))
                        }
                        position += 1
                    }
                    entry = try cursor.move(.next)
                }
            }
        case .newestFirst, .oldestFirst:
            let expired = try expiredKeys(schema: schema, now: now, txn: txn)
            try UpdateOrder.forEach(schema: schema, descending: options.sort == .newestFirst, txn: txn) { _, id in
                let key = Array(id)
                if expired.contains(key) {
                    expiredMet.append(key)
                } else {
                    if position >= options.offset, let bytes = try txn.get(schema.records, key: key) {
                        items.append(try session.decodeRow(T.self, bytes: bytes, id: id))
                    }
                    position += 1
                }
                return position < end
            }
        }
        return (items, expiredMet)
    }
}

extension RecordReader {
    /// The live record stored under `key`, decoded; nil when it is absent, or expired (then `expired` is set).
    static func get<T: LocalStorable>(
        _ type: T.Type, key: UnsafeRawBufferPointer, id: String, schema: TypeSchema,
        now: Int64, txn: Transaction,
        session: DecodeSession, expired: inout Bool
    ) throws -> T? {
        // `expired` is set rather than returned in a tuple: a tuple holding a `T?` is a type whose metadata
        // unspecialized code looks up in the runtime at every call.
        guard let bytes = try txn.get(schema.records, key: key) else { return nil }
        let view = try RecordDecoding.view(of: bytes, T.self, id: id, fixedPartOnly: true)
        if view.isExpired(at: now) {
            expired = true
            return nil
        }
        return try RecordDecoding.decode(T.self, view: view, id: id, session: session)
    }

    /// What the header of the record stored under `key` says, expired or not.
    static func metadata<T: LocalStorable>(
        _ type: T.Type, key: [UInt8], id: String, schema: TypeSchema,
        now: Int64, txn: Transaction
    ) throws -> StorageMetadata? {
        guard let bytes = try txn.get(schema.records, key: key) else { return nil }
        let view = try RecordDecoding.view(of: bytes, T.self, id: id, fixedPartOnly: true)
        return StorageMetadata(
            createdAt: EpochNanoseconds.date(fromNanoseconds: view.createdAt),
            updatedAt: EpochNanoseconds.date(fromNanoseconds: view.updatedAt),
            expiresAt: view.expiresAt == 0 ? nil : EpochNanoseconds.date(fromNanoseconds: view.expiresAt),
            sizeInBytes: view.payload.count,
            isExpired: view.isExpired(at: now),
            version: view.version)
    }
}

extension RecordReader {
    /// The soonest expiry after `now` among the type's records (ns since 1970), or nil when none expires.
    static func nextExpiry(schema: TypeSchema, after now: Int64, txn: Transaction) throws -> Int64? {
        try txn.withCursor(schema.expiry) { cursor in
            guard let entry = try cursor.seek(atLeast: RecordWriter.timeKey(now &+ 1)), entry.key.count == 8 else {
                return nil
            }
            return Int64(bitPattern: UInt64(bigEndian: entry.key.loadUnaligned(as: UInt64.self)))
        }
    }
}
