/// How many records and payload bytes a store holds, as one transaction sees it.
///
/// A commit may use the map's reserve (``Environment/reserve``) only when it leaves the store no larger
/// than it found it: deletes, purges, evictions, `deleteAll`. The writer compares the totals at the start
/// and at the end of such a commit.
struct StoreTotals: Equatable {
    var records = 0
    var payloadBytes = 0

    /// The totals of every type `txn` sees (zero for a store with no types yet); a damaged type, which no
    /// commit can change, is left out (``TypeSchema/openUndamaged(_:in:logger:)``).
    static func of(_ txn: Transaction, logger: (any StorageLogger)?) throws -> StoreTotals {
        var totals = StoreTotals()
        guard let meta = try txn.openDatabase(TypeRegistry.metaName, create: false) else { return totals }
        let infos = try TypeRegistry.all(meta: meta, txn: txn).infos
        for schema in try TypeSchema.openUndamaged(infos, in: txn, logger: logger) {
            totals.records += try txn.entryCount(schema.records)
            totals.payloadBytes += try CountTree.payloadBytes(schema: schema, txn: txn) ?? 0
        }
        return totals
    }

    /// Whether `later` holds more records or more payload bytes than these totals.
    func grew(to later: StoreTotals) -> Bool {
        later.records > records || later.payloadBytes > payloadBytes
    }
}

/// A commit that ran with the map's reserve would leave the store larger: it is aborted, and the write
/// fails with `storageFull` as one that does not fit in `maxMapSize`.
struct ReserveRefused: Error {}
