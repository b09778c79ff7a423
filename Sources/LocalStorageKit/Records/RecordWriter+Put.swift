/// Saving records: one (``put(_:expiresAt:schema:context:)``) or a sorted batch
/// (``putAll(_:expiresAt:schema:context:)``), with the entries of the records they replace kept in step.
extension RecordWriter {
    /// Inserts or replaces a record: keeps `createdAt` of a live record it replaces, moves
    /// `updatedAt` to the batch time, takes the new expiration. Publishes `.inserted` or `.updated`.
    static func put(
        _ record: PreparedRecord, expiresAt: Int64, schema: TypeSchema,
        context: CommitQueue.Context
    ) throws {
        var payloadBytes = 0
        var replacedDamaged = false
        let (header, replaced) = try putRecord(
            record, expiresAt: expiresAt, schema: schema, context: context, payloadBytes: &payloadBytes,
            replacedDamaged: &replacedDamaged, isObserved: context.isObserved(schema.name))
        try CountTree.addPayloadBytes(payloadBytes, schema: schema, txn: context.txn)
        if let replaced {
            try replaceEntries(of: replaced, with: header, key: record.key, schema: schema, txn: context.txn)
        } else {
            try addEntries(of: header, key: record.key, schema: schema, txn: context.txn)
        }
        if replacedDamaged { try CountTree.recountDeclarations(schema: schema, txn: context.txn) }
    }

    /// Inserts or replaces many records (sorted by key, each id once), then adds their entries database
    /// by database in key order: sorted puts fill B-tree pages in sequence instead of touching a random
    /// page per entry, which makes bulk saves several times faster.
    static func putAll(
        _ records: [PreparedRecord], expiresAt: Int64, schema: TypeSchema,
        context: CommitQueue.Context
    ) throws {
        var indexEntries = schema.indexes.map { _ in EntryBatch(capacity: records.count) }
        // A batch whose first id sorts after every stored one replaces nothing and goes in at the end
        // (`MDB_APPEND`): pages are filled instead of split in half.
        let appending = try records.first.map {
            try SortedAppend.sortsAfterLast($0.key, in: schema.records, txn: context.txn)
        }
        // The type's payload-bytes counter changes once for the batch, not once for each record.
        var payloadBytes = 0
        var replacedDamaged = false
        // Asked once for the batch (by name: a hash and a comparison of the type's name).
        let isObserved = context.isObserved(schema.name)
        let keepsUpdateOrder = try schema.keepsUpdateOrder(context.txn)
        // Each index's name and kind, taken out once: the loop copies no index (two array retains each) and makes
        // no key array (``EntryBatch/append(kind:stored:id:)`` writes the key into the batch's arena).
        let indexes = schema.indexes.map { (name: $0.name, kind: $0.kind) }
        try records.withUnsafeBufferPointer { records in
            for position in records.indices {
                let (header, replaced) = try putRecord(
                    records[position], expiresAt: expiresAt, schema: schema, context: context,
                    payloadBytes: &payloadBytes, replacedDamaged: &replacedDamaged, isObserved: isObserved,
                    appending: appending == true)
                let key = records[position].key
                if let replaced {
                    try removeEntries(
                        of: replaced, key: key, schema: schema, txn: context.txn, keepsUpdateOrder: keepsUpdateOrder)
                }
                for slot in indexes.indices {
                    let (name, kind) = indexes[slot]
                    if let found = indexValuePosition(in: header, name: name, kind: kind) {
                        header.indexValues[found].bytes.withUnsafeBytes {
                            indexEntries[slot].append(kind: kind, stored: $0, id: key)
                        }
                    } else {
                        indexEntries[slot].append(kind: kind, stored: nil, id: key)
                    }
                }
            }
        }
        let txn = context.txn
        // Every record of the batch has the same update time (and expiry, and signature): one key, ids
        // already sorted.
        // Each run is in (key, id) order: it goes in at the end of its database when it sorts after it.
        // (From layout 5 on, the declaration is counted once for the batch, at the end.)
        var runs: [(Database, [UInt8])] = []
        if keepsUpdateOrder { runs.append((schema.updated, timeKey(context.now))) }
        if !schema.countsDeclarations { runs.append((schema.signatures, schema.signatureKey)) }
        if expiresAt != 0 { runs.append((schema.expiry, timeKey(expiresAt))) }
        // Read in place: copying a record retains its five buffers, each a cache miss in a batch of thousands.
        let idsAscending = try records.withUnsafeBufferPointer { records in
            for (database, key) in runs {
                try SortedAppend.run(into: database, txn: txn) { run in
                    for position in records.indices { try run.add(key: key, value: records[position].key, txn: txn) }
                }
            }
            // `sortByKey` hands the records over in id order, each id once; checked, as the index entries' sort
            // relies on it to leave entries of one key in the order they came in.
            return records.indices.dropFirst().allSatisfy { position in
                records[position - 1].key.withUnsafeBytes { previous in
                    records[position].key.withUnsafeBytes { ByteOrder.compare(previous, $0) < 0 }
                }
            }
        }
        var counterRuns: [CountTree.LevelRuns] = []
        for (position, index) in schema.indexes.enumerated() {
            indexEntries[position].sort(idsAscending: idsAscending)
            let entries = indexEntries[position]
            // The counters are written after every index's entries, in key order (appended on a first load).
            let counters = schema.counts.map { (runs: CountTree.LevelRuns(index: index), counts: $0) }
            var tally = counters.map { $0.runs.tally(counts: $0.counts) }
            try SortedAppend.run(into: index.dbi, txn: txn) { run in
                try entries.forEach { key, id in
                    if try run.add(key: key, value: id, txn: txn) { try tally?.note(key, count: 1, txn: txn) }
                }
            }
            try tally?.finish(txn: txn)
            if let counters { counterRuns.append(counters.runs) }
        }
        if let counts = schema.counts { try CountTree.write(counterRuns, counts: counts, txn: txn) }
        // After the index counters: the payload-bytes counter sorts after them, and the declaration's after it.
        try CountTree.addPayloadBytes(payloadBytes, schema: schema, txn: txn)
        try CountTree.addRecords(records.count, indexedWith: schema.signature, schema: schema, txn: txn)
        // A damaged record it replaced could not say which declaration it was counted under.
        if replacedDamaged { try CountTree.recountDeclarations(schema: schema, txn: txn) }
    }

    /// Writes the record itself and publishes the change; returns its header, whose entries the caller adds,
    /// and the header of a readable record it replaced, whose entries it leaves for the caller to remove or
    /// move (``replaceEntries(of:with:key:schema:txn:)``). A damaged record's entries are removed here, as its
    /// header cannot say where they are. `appending`: the key sorts after every stored one. The change in the
    /// type's payload bytes is added to `payloadBytes`, for the caller to count once (an update that keeps the
    /// payload's size writes no counter, and a batch writes it once). `isObserved`: whether anyone observes the type
    /// (``CommitQueue/Context/isObserved(_:)``, asked once per batch). `replacedDamaged` is set when it replaced a
    /// damaged record whose declaration counter it could not find: the caller counts the type again at the end.
    private static func putRecord(
        _ record: borrowing PreparedRecord, expiresAt: Int64, schema: TypeSchema,
        context: CommitQueue.Context, payloadBytes: inout Int, replacedDamaged: inout Bool, isObserved: Bool,
        appending: Bool = false
    ) throws -> (header: RecordHeader, replaced: RecordHeader?) {
        let txn = context.txn
        // Sealed first, so that the size the limits count is checked before anything is written.
        let (envelope, payload) = try sealed(
            record.payload, format: record.format, key: record.key, schema: schema, txn: txn)
        try Evictor.refuseOversized(
            record.id, size: payload.count, schema: schema, storeMaxBytes: context.storeMaxBytes)
        var createdAt = context.now
        var replacesLiveRecord = false
        var oldValues: [StoredIndexValue]?
        var regionKnown = true
        var replaced: RecordHeader?
        if !appending, let existing = try txn.get(schema.records, key: record.key) {
            payloadBytes -= payloadSize(of: existing)
            // A damaged record is replaced: saving its id again is one way to repair it.
            switch try StoredRecord(existing).header(in: schema, txn: txn) {
            case .readable(let view, let old):
                if view.version > record.version {
                    throw LocalStorageError.decodingFailed(
                        reason: "\(schema.name) \"\(record.id)\" is stored at version \(view.version), newer than "
                            + "this app's version \(record.version) (written by a newer version); it was not overwritten"
                    )
                }
                // Sealed with a cipher this version does not know: a newer version's record, kept as such.
                if view.envelope.contains(.sealed), let seal = view.payload.first,
                    PayloadSealing.algorithm(ofVersion: seal) == nil
                {
                    throw LocalStorageError.decodingFailed(
                        reason:
                            "\(schema.name) \"\(record.id)\" is sealed with seal version \(seal), which a newer version "
                            + "of LocalStorageKit writes; it was not overwritten")
                }
                if !view.isExpired(at: context.now) {
                    createdAt = view.createdAt
                    replacesLiveRecord = true
                    oldValues = old.indexValues
                    // Indexed with another declaration: its values are not this one's.
                    if old.signature != schema.signature { regionKnown = false }
                }
                replaced = old
            case .damaged:
                // Nothing a newer version wrote is overwritten.
                if let reason = RecordView.newerLayout(of: existing) {
                    throw LocalStorageError.decodingFailed(
                        reason: "\(schema.name) \"\(record.id)\": \(reason); it was not overwritten")
                }
                // A damaged header cannot say where the record's entries are: find them all.
                if try CountTree.uncountDamaged(existing, schema: schema, txn: txn) { replacedDamaged = true }
                try removeEntriesOfDamagedRecord(key: record.key, schema: schema, txn: txn)
                regionKnown = false
            }
        }
        try noteSample(record.payload, schema: schema, context: context)
        let header = RecordHeader(
            format: record.format, version: record.version, createdAt: createdAt,
            updatedAt: context.now, expiresAt: expiresAt, signature: schema.signature,
            indexValues: record.indexValues, envelope: envelope,
            layout: schema.writesCompactHeaders ? .compact : .named
        ).laidOut(for: schema)
        // Header and payload go straight into the map (`MDB_RESERVE`): no buffer holds them together.
        let headerBytes = try header.bytes()
        let length = headerBytes.count + payload.count
        try txn.putReserved(schema.records, key: record.key, length: length, appending: appending) { target in
            headerBytes.withUnsafeBytes { target.copyMemory(from: $0) }
            payload.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: target[headerBytes.count...]).copyMemory(from: source)
            }
        }
        payloadBytes += payload.count
        context.log(schema, replacesLiveRecord ? .updated : .inserted, id: record.key)
        if isObserved {
            let kind: PublishedChange.Kind = replacesLiveRecord ? .updated(record.value) : .inserted(record.value)
            let region =
                regionKnown
                ? PublishedChange.Region(old: oldValues, new: record.indexValues, signature: schema.signature) : nil
            context.publish(PublishedChange(typeName: schema.name, kind: kind, region: region, recordKey: record.key))
        }
        return (header, replaced)
    }
}
