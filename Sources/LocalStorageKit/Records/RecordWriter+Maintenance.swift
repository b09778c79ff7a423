extension RecordWriter {
    /// Purges every type's expired records in batches of 10,000 per transaction, and the leases and remembered
    /// nils of loads that ended (``LeaseBook/removeEnded(now:type:limit:txn:)``), as many per transaction.
    static func purgeAllExpired(meta: Database, writer: CommitQueue) throws -> Int {
        var total = 0
        var removingEndedLeases = true
        var size = PartSize(largest: 10_000)
        while true {
            let limit = size.current
            let batch: (purged: Int, examined: Int, moreEndedLeases: Bool)
            do {
                batch = try purgeExpiredBatch(
                    meta: meta, writer: writer, limit: limit, removingEndedLeases: removingEndedLeases)
            } catch LocalStorageError.storageFull where size.shrink() {
                continue  // Expired records spread over a full store: a smaller batch rewrites fewer pages.
            }
            size.grow()
            removingEndedLeases = batch.moreEndedLeases
            total += batch.purged
            if batch.examined < limit && !batch.moreEndedLeases { return total }
        }
    }

    /// Purges up to `limit` expired records, across every type, in one transaction; returns how many, and how
    /// many expiry entries it went through (when that reaches `limit`, there may be more). With
    /// `removingEndedLeases`, the transaction also removes up to `limit` entries of loads that ended (not
    /// counted); `moreEndedLeases` says that it removed `limit` of them, so there may be more.
    static func purgeExpiredBatch(
        meta: Database, writer: CommitQueue, limit: Int, removingEndedLeases: Bool = false
    ) throws -> (purged: Int, examined: Int, moreEndedLeases: Bool) {
        try writer.transact { context in
            let endedLeases =
                removingEndedLeases
                ? try LeaseBook.removeEnded(now: context.leaseNow, limit: limit, txn: context.txn) : 0
            var (purged, examined) = (0, 0)
            let infos = try TypeRegistry.all(meta: meta, txn: context.txn).infos
            for schema in try TypeSchema.openUndamaged(infos, in: context.txn, logger: writer.logger)
            where examined < limit {
                let batch = try RecordWriter.purgeExpired(
                    schema: schema, now: context.now, limit: limit - examined, context: context)
                purged += batch.purged
                examined += batch.examined
            }
            return (purged, examined, endedLeases == limit)
        }
    }
}

extension RecordWriter {
    /// Stores a record exactly as a backup holds it (header and payload), replacing any record with its key,
    /// with the entries its header calls for.
    static func restore(
        key: [UInt8], header: RecordHeader, payload: [UInt8], schema: TypeSchema,
        txn: Transaction
    ) throws {
        try delete(key: key, schema: schema, txn: txn)
        // An import seals what it writes into an encrypted store.
        var header = header
        // A declaration the store does not describe (an export names only each type's newest) cannot say which
        // indexes the record belongs in: it gets the newest declaration's entries and the unknown signature, which
        // every declaration's app re-indexes. (Keeping its signature left it out of the indexes its own declaration
        // has and the newest lacks, once that app registered it; taking the newest's left it without the values of
        // the newest's indexes its own declaration lacks, for good: /work/trial68.md.)
        header.signature = try schema.storedSignature(for: header.signature, txn: txn)
        let stored: [UInt8]
        (header.envelope, stored) = try sealed(payload, format: header.format, key: key, schema: schema, txn: txn)
        try txn.put(schema.records, key: key, value: try header.serialized(payload: stored))
        try CountTree.addPayloadBytes(stored.count, schema: schema, txn: txn)
        try addEntries(of: header, key: key, schema: schema, txn: txn)
    }

    /// Empties a type's entry databases and adds every record's entries again from its header; a record
    /// whose header is damaged gets none (`verify` reports it). A newer version's record (a header this
    /// version cannot read) keeps the entries it has: it is never touched.
    static func rebuildEntries(of schema: TypeSchema, txn: Transaction) throws {
        let current = try schema.current(in: txn) ?? schema
        let kept = try entriesOfNewerRecords(of: schema, current: current, txn: txn)
        for dbi in [current.updated, current.expiry, current.signatures] + current.allIndexes.map(\.dbi) {
            try txn.empty(dbi)
        }
        if let counts = current.counts {
            for index in current.allIndexes { try CountTree.clear(index, counts: counts, txn: txn) }
        }
        for entry in kept {
            try txn.put(entry.database, key: entry.key, value: entry.id)
            if let index = entry.index, let counts = current.counts {
                try entry.key.withUnsafeBytes {
                    try CountTree.adjust($0, by: 1, index: index, counts: counts, txn: txn)
                }
            }
        }
        try CountTree.recountPayloadBytes(schema: current, txn: txn)
        try CountTree.clearDeclarationCounts(schema: current, txn: txn)
        try txn.withCursor(schema.records) { cursor in
            var entry = try cursor.move(.first)
            while let record = entry {
                switch try StoredRecord(record.value).header(in: schema, txn: txn) {
                case .readable(_, let header):
                    try addEntries(of: header, key: Array(record.key), schema: schema, txn: txn)
                case .damaged:
                    break  // Its header says nothing to index; reads of it throw and `verify` reports it.
                }
                entry = try cursor.move(.next)
            }
        }
    }

    /// The entries (database, key, record id, and the index for index entries) pointing at the type's records
    /// that a newer version wrote; none, without a walk of the entries, when the type has no such record.
    private static func entriesOfNewerRecords(
        of schema: TypeSchema, current: TypeSchema, txn: Transaction
    ) throws -> [(database: Database, key: [UInt8], id: [UInt8], index: TypeSchema.Index?)] {
        var newer: Set<[UInt8]> = []
        try txn.withCursor(schema.records) { cursor in
            var entry = try cursor.move(.first)
            while let record = entry {
                if case .damaged = StoredRecord(record.value), RecordView.newerLayout(of: record.value) != nil {
                    newer.insert(Array(record.key))
                }
                entry = try cursor.move(.next)
            }
        }
        guard !newer.isEmpty else { return [] }
        var kept: [(database: Database, key: [UInt8], id: [UInt8], index: TypeSchema.Index?)] = []
        let databases: [(Database, TypeSchema.Index?)] =
            (try current.keepsUpdateOrder(txn) ? [(current.updated, nil)] : [])
            + [(current.expiry, nil), (current.signatures, nil)] + current.allIndexes.map { ($0.dbi, $0) }
        for (database, index) in databases {
            for entry in try entries(of: database, pointingAt: { newer.contains(Array($0)) }, txn: txn) {
                kept.append((database, entry.key, entry.id, index))
            }
        }
        return kept
    }
}
