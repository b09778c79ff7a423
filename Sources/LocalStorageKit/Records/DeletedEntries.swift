/// What a batch of deletes leaves for its end (`delete(_:matching:)`): the change in the type's payload bytes
/// and each index's removed entries, whose count-tree counters then change once per group instead of once per
/// entry and level (``CountTree/Tally`` takes the entries in key order).
final class DeletedEntries {
    var payloadBytes = 0
    private var removed: [Database: (index: TypeSchema.Index, entries: EntryBatch)] = [:]

    /// Notes that the entry (`entryKey`, `id`) left `index`.
    func note(_ entryKey: [UInt8], id: [UInt8], in index: TypeSchema.Index) {
        removed[index.dbi, default: (index, EntryBatch(capacity: 64))].entries.append(key: entryKey, id: id)
    }

    /// Changes the payload-bytes counter and, index by index, the counters of the removed entries.
    func finish(schema: TypeSchema, txn: Transaction) throws {
        try CountTree.addPayloadBytes(payloadBytes, schema: schema, txn: txn)
        guard let counts = schema.counts else { return }
        for (_, item) in removed {
            var entries = item.entries
            entries.sort(idsAscending: false)
            var tally = CountTree.Tally(index: item.index, counts: counts)
            try entries.forEach { key, _ in try tally.note(key, count: -1, txn: txn) }
            try tally.finish(txn: txn)
        }
    }
}

extension RecordWriter {
    /// Deletes the records under `keys` (each once) as ``delete(id:key:schema:context:deferred:)`` deletes one
    /// (entries, change log, `.deleted(id:)`), with the count tree changed once for the batch. Returns how many
    /// records it removed (a key without a record, such as a damaged store's stray index entry, is none).
    @discardableResult
    static func deleteMany(keys: [[UInt8]], schema: TypeSchema, context: CommitQueue.Context) throws -> Int {
        let deferred = DeletedEntries()
        var removed = 0
        for key in keys {
            let found = try delete(
                id: String(decoding: key, as: UTF8.self), key: key, schema: schema, context: context,
                deferred: deferred)
            if found { removed += 1 }
        }
        try deferred.finish(schema: schema, txn: context.txn)
        return removed
    }
}
