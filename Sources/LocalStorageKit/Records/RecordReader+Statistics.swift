extension RecordReader {
    /// What one type holds in `txn`'s snapshot: records (expired ones included), their payload bytes and the
    /// records expired by `now` but not purged yet.
    ///
    /// Complexity: O(expired records), plus O(records) when the store keeps no counters (the payload
    /// bytes are then summed from the records' headers, read in place).
    static func figures(
        schema: TypeSchema, now: Int64, txn: Transaction
    )
        throws -> (records: Int, payloadBytes: Int, expired: Int)
    {
        let records = try txn.entryCount(schema.records)
        let payloadBytes =
            try CountTree.payloadBytes(schema: schema, txn: txn)
            ?? CountTree.walkedPayloadBytes(schema: schema, txn: txn)
        let expired = try expiredKeys(schema: schema, now: now, txn: txn).count
        return (records, payloadBytes, expired)
    }
}
