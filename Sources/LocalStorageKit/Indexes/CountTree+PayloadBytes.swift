extension CountTree {
    /// The counter of a type's payload bytes (the sum of what ``StorageMetadata/sizeInBytes`` reports),
    /// kept beside its index counters under slot `0xFFFFFFFF`.
    static func payloadBytesKey(type: UInt32) -> [UInt8] {
        counterPrefix(type: type, slot: UInt32.max) + [0]
    }

    /// Adds `delta` to a type's payload bytes.
    static func addPayloadBytes(_ delta: Int, schema: TypeSchema, txn: Transaction) throws {
        guard delta != 0, let counts = schema.counts else { return }
        try add(delta, toCounter: payloadBytesKey(type: schema.number), counts: counts, txn: txn)
    }

    /// A type's payload bytes, or nil when the store keeps no counters (the caller walks the records).
    static func payloadBytes(schema: TypeSchema, txn: Transaction) throws -> Int? {
        guard let counts = schema.counts else { return nil }
        guard let stored = try txn.get(counts, key: payloadBytesKey(type: schema.number)) else { return 0 }
        return counterValue(stored)
    }

    /// Sets a type's payload bytes from its records: O(records), when an older store is upgraded.
    static func recountPayloadBytes(schema: TypeSchema, txn: Transaction) throws {
        guard let counts = schema.counts else { return }
        let key = payloadBytesKey(type: schema.number)
        try txn.delete(counts, key: key)
        try add(try walkedPayloadBytes(schema: schema, txn: txn), toCounter: key, counts: counts, txn: txn)
    }

    /// A type's payload bytes summed over its records: O(records), for stores that keep no counter.
    static func walkedPayloadBytes(schema: TypeSchema, txn: Transaction) throws -> Int {
        var total = 0
        try txn.withCursor(schema.records) { cursor in
            var entry = try cursor.move(.first)
            while let record = entry {
                total += RecordWriter.payloadSize(of: record.value)
                entry = try cursor.move(.next)
            }
        }
        return total
    }
}
