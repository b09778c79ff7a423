extension RecordWriter {
    /// Purges every type's expired records in batches of 10,000 per transaction.
    static func purgeAllExpired(meta: Database, writer: Writer) throws -> Int {
        var total = 0
        while true {
            let purged = try purgeExpiredBatch(meta: meta, writer: writer, limit: 10_000)
            total += purged
            if purged < 10_000 { return total }
        }
    }

    /// Purges up to `limit` expired records, across every type, in one transaction; returns how many.
    static func purgeExpiredBatch(meta: Database, writer: Writer, limit: Int) throws -> Int {
        try writer.transact { context in
            var purged = 0
            for info in try TypeRegistry.all(meta: meta, txn: context.txn).infos where purged < limit {
                let schema = try TypeSchema.open(info, in: context.txn)
                purged += try RecordWriter.purgeExpired(schema: schema, now: context.now, limit: limit - purged,
                                                        context: context)
            }
            return purged
        }
    }
}
