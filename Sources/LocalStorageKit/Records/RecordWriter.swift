/// The writes that keep a record, its index entries, its update-time entry and its expiry entry in
/// step. Every function runs inside one write transaction.
enum RecordWriter {
    /// Validates an id as a record key: 1…511 bytes of UTF-8.
    static func key(for id: String) throws(LocalStorageError) -> [UInt8] {
        let bytes = Array(id.utf8)
        try validate(keyLength: bytes.count)
        return bytes
    }

    /// Checks an id's UTF-8 length against LMDB's key limit.
    @inline(__always)
    static func validate(keyLength: Int) throws(LocalStorageError) {
        if keyLength == 0 { throw .invalidId("an id must not be empty") }
        if keyLength > 511 {
            throw .invalidId("an id may have at most 511 bytes of UTF-8; this one has \(keyLength)")
        }
    }

    /// Rewrites a record's header (same payload), keeping its entries in step.
    static func replaceHeader(
        of view: RecordView, with header: RecordHeader, key: [UInt8], schema: TypeSchema,
        txn: Transaction
    ) throws {
        let old = try view.header(in: schema, txn: txn)
        let bytes = try header.laidOut(for: schema).serialized(payload: Array(view.payload))
        try removeEntries(of: old, key: key, schema: schema, txn: txn)
        try txn.put(schema.records, key: key, value: bytes)
        try addEntries(of: header, key: key, schema: schema, txn: txn)
    }

    /// Deletes a record and its entries; false when there was no record.
    @discardableResult
    static func delete(key: [UInt8], schema: TypeSchema, txn: Transaction) throws -> Bool {
        try remove(key: key, schema: schema, txn: txn) != nil
    }

    /// Deletes a record and its entries; returns nil when there was none, else the header it had (nil
    /// inside when the header was damaged) and whether it had expired by `now`.
    /// With `deferred`, the count tree's counters are left for ``DeletedEntries/finish(schema:txn:)``.
    private static func remove(
        key: [UInt8], schema: TypeSchema, txn: Transaction,
        now: Int64 = 0, deferred: DeletedEntries? = nil
    ) throws -> (header: RecordHeader?, wasExpired: Bool)? {
        guard let existing = try txn.get(schema.records, key: key) else { return nil }
        if let deferred {
            deferred.payloadBytes -= payloadSize(of: existing)
        } else {
            try CountTree.addPayloadBytes(-payloadSize(of: existing), schema: schema, txn: txn)
        }
        var removed: (header: RecordHeader?, wasExpired: Bool) = (nil, false)
        switch try StoredRecord(existing).header(in: schema, txn: txn) {
        case .readable(let view, let header):
            removed = (header, view.isExpired(at: now))
            try removeEntries(of: header, key: key, schema: schema, txn: txn, deferred: deferred)
        case .damaged:
            let recounts = try CountTree.uncountDamaged(existing, schema: schema, txn: txn)
            try removeEntriesOfDamagedRecord(key: key, schema: schema, txn: txn)
            try txn.delete(schema.records, key: key)
            if recounts { try CountTree.recountDeclarations(schema: schema, txn: txn) }
            return removed
        }
        try txn.delete(schema.records, key: key)
        return removed
    }

    /// Deletes every record of a type with all its entries, in every index the type ever declared.
    static func deleteAll(schema: TypeSchema, txn: Transaction) throws {
        try txn.empty(schema.records)
        if let counts = schema.counts { try txn.delete(counts, key: CountTree.payloadBytesKey(type: schema.number)) }
        try txn.empty(schema.updated)
        try txn.empty(schema.expiry)
        try txn.empty(schema.signatures)
        try CountTree.clearDeclarationCounts(schema: schema, txn: txn)
        for index in try schema.current(in: txn)?.allIndexes ?? schema.allIndexes {
            try txn.empty(index.dbi)
            if let counts = schema.counts { try CountTree.clear(index, counts: counts, txn: txn) }
        }
    }

    /// The key a record has in `index`: its value's ordered encoding, or ``IndexKeys/missing``.
    static func indexKey(of header: RecordHeader, for index: TypeSchema.Index) -> [UInt8] {
        guard let position = indexValuePosition(in: header, name: index.name, kind: index.kind) else {
            return IndexKeys.missing
        }
        return header.indexValues[position].bytes.withUnsafeBytes { IndexValue.keyBytes(kind: index.kind, stored: $0) }
    }

    /// Where `header` holds its value of the index (`name`, `kind`), or nil when it has none.
    @inline(__always)
    static func indexValuePosition(in header: RecordHeader, name: String, kind: IndexKind) -> Int? {
        header.indexValues.firstIndex { $0.name == name && $0.kind == kind }
    }

    /// The payload bytes of a stored record (what ``StorageMetadata/sizeInBytes`` reports). A damaged one
    /// counts whole, alike when the counter is walked and when the record is removed, so the two agree.
    static func payloadSize(of stored: UnsafeRawBufferPointer) -> Int {
        switch StoredRecord(stored, fixedPartOnly: true) {
        case .readable(let view): view.payload.count
        case .damaged: stored.count
        }
    }

    /// A declaration signature as the 8-byte big-endian key of the signature database.
    static func signatureKey(_ signature: UInt64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(8)
        key.appendBigEndian(signature)
        return key
    }

    /// A timestamp as an 8-byte big-endian key (memcmp order = time order).
    static func timeKey(_ nanoseconds: Int64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(8)
        key.appendBigEndian(UInt64(bitPattern: nanoseconds))
        return key
    }

    /// Deletes up to `limit` records of a type that expired by `now`, publishing `.expired(id)`. Returns how many
    /// it deleted, and how many expiry entries it went through (stale and dangling ones are removed and count
    /// too: a batch that met some is full all the same, and the caller goes on).
    static func purgeExpired(
        schema: TypeSchema, now: Int64, limit: Int, context: CommitQueue.Context
    ) throws -> (purged: Int, examined: Int) {
        let txn = context.txn
        var expired: [(time: [UInt8], key: [UInt8])] = []
        try RecordReader.forEachExpired(schema: schema, now: now, txn: txn) { time, key in
            expired.append((Array(time), Array(key)))
            return expired.count < limit
        }
        var purged = 0
        for (time, key) in expired {
            let bytes = try txn.get(schema.records, key: key)
            // A damaged header has no trustworthy expiry: the entry says it expired, so it goes.
            let view = bytes.flatMap { StoredRecord($0).view }
            if let view, !view.isExpired(at: now) {
                // A stale entry (the header says otherwise): drop just the entry.
                try txn.delete(schema.expiry, key: time, value: key)
                continue
            }
            if bytes != nil, try delete(key: key, schema: schema, txn: txn) {
                purged += 1
                context.log(schema, .expired, id: key)
                context.publish(
                    PublishedChange(
                        typeName: schema.name,
                        kind: .expired(String(decoding: key, as: UTF8.self))))
            }
            // A dangling entry (no record, or a damaged header) is removed either way.
            try txn.delete(schema.expiry, key: time, value: key)
        }
        return (purged, expired.count)
    }
}

extension RecordWriter {
    /// Stores a record migrated by a read at its new version, keeping its timestamps and expiry, unless
    /// the record changed since it was read. A payload of another size is noted in `context`, so that the
    /// commit keeps the type's and the store's `maxBytes` (a migration that grows payloads went over them).
    static func apply(_ upgrade: RecordUpgrade, schema: TypeSchema, context: CommitQueue.Context) throws {
        let txn = context.txn
        // A record damaged since it was read changed since: it is left for reads to report.
        guard let bytes = try txn.get(schema.records, key: upgrade.key), let view = StoredRecord(bytes).view,
            view.version == upgrade.fromVersion, view.updatedAt == upgrade.updatedAt
        else { return }
        let (envelope, payload) = try sealed(
            upgrade.payload, format: upgrade.format, key: upgrade.key, schema: schema, txn: txn)
        let old = try view.header(in: schema, txn: txn)
        var header = old.laidOut(for: schema)
        header.format = upgrade.format
        header.envelope = envelope
        header.version = upgrade.version
        try CountTree.addPayloadBytes(payload.count - view.payload.count, schema: schema, txn: txn)
        if payload.count != view.payload.count { context.resizedTypes.insert(schema.number) }
        guard let indexValues = upgrade.indexValues else {
            // A reseal: only the payload changes.
            try txn.put(schema.records, key: upgrade.key, value: try header.serialized(payload: payload))
            return
        }
        header.indexValues = indexValues
        header.signature = schema.signature
        header = header.laidOut(for: schema)
        try removeEntries(of: old, key: upgrade.key, schema: schema, txn: txn)
        try txn.put(schema.records, key: upgrade.key, value: try header.serialized(payload: payload))
        try addEntries(of: header, key: upgrade.key, schema: schema, txn: txn)
    }
}

extension RecordWriter {
    /// A payload as it is stored, written in `txn`: compressed and sealed as the schema's ``PayloadSealing``
    /// says.
    static func sealed(
        _ payload: [UInt8], format: PayloadFormat, key: [UInt8], schema: TypeSchema, txn: Transaction
    ) throws -> (PayloadEnvelope, [UInt8]) {
        guard let sealing = schema.sealing else { return ([], payload) }
        return try sealing.wrap(payload, format: format, typeName: schema.name, id: key, txn: txn)
    }

    /// Hands a written payload to the compressor's dictionary training; a dictionary trained in this
    /// transaction is used once it commits.
    static func noteSample(_ payload: [UInt8], schema: TypeSchema, context: CommitQueue.Context) throws {
        guard let compressor = schema.sealing?.compressor,
            let (id, dictionary) = try compressor.noteSample(payload, txn: context.txn)
        else { return }
        context.onCommit { compressor.dictionaries.add(id, bytes: dictionary) }
    }
}

extension RecordWriter {
    /// Puts `records` in key order, each id once with its last value (a stable sort by memcmp, then the last of
    /// each run of equal ids), in place: the records move, and none is copied (a copy retains its five buffers, a
    /// cache miss each in a batch of thousands; building a sorted copy was a tenth of a bulk save's writer time).
    static func sortByKey(_ records: inout [PreparedRecord]) {
        records.sort { a, b in
            a.key.withUnsafeBytes { left in b.key.withUnsafeBytes { right in ByteOrder.compare(left, right) < 0 } }
        }
        let kept = records.withUnsafeMutableBufferPointer { records in
            var kept = 0
            for position in records.indices {
                if position + 1 < records.count, records[position + 1].key == records[position].key { continue }
                if kept != position { records.swapAt(kept, position) }
                kept += 1
            }
            return kept
        }
        records.removeLast(records.count - kept)
    }
}

extension RecordWriter {
    /// Deletes the record with `id` and publishes `.deleted(id)`; a missing id does nothing. With `deferred`
    /// (a batch), the count tree's counters are left for the batch to change once. With `keepsLease` (an
    /// eviction, a refresh that found nothing) the id's lease is not voided.
    @discardableResult
    static func delete(
        id: String, key: [UInt8], schema: TypeSchema, context: CommitQueue.Context,
        deferred: DeletedEntries? = nil, keepsLease: Bool = false
    ) throws -> Bool {
        guard let removed = try remove(key: key, schema: schema, txn: context.txn, now: context.now, deferred: deferred)
        else {
            // No record, but a load of the id under way must still lose to this delete; its callers, here and
            // in other processes, wake to the void (no record changed).
            if !keepsLease, try context.voidLease(schema, id: key, leavesRecord: false) {
                context.touch(schema, id: key)
            }
            return false
        }
        context.log(schema, .deleted, id: key, keepsLease: keepsLease)
        if context.isObserved(schema.name) {
            // A damaged header says nothing of where the record was: no region, so every live query reruns.
            let region = removed.header.map {
                PublishedChange.Region(
                    old: removed.wasExpired ? nil : $0.indexValues, new: nil, signature: $0.signature)
            }
            context.publish(PublishedChange(typeName: schema.name, kind: .deleted(id), region: region))
        }
        return true
    }

    /// Deletes every record of a type and publishes `.cleared`.
    static func clear(schema: TypeSchema, context: CommitQueue.Context) throws {
        try deleteAll(schema: schema, txn: context.txn)
        context.log(schema, .cleared, id: [])
        context.publish(PublishedChange(typeName: schema.name, kind: .cleared))
    }

    /// Gives a live record a new expiry without rewriting its payload. Like any write of the id it voids a load
    /// of it under way (a background refresh), so the load's value, with the policy's expiry, is not stored over
    /// the expiry set here (trial86 #3).
    ///
    /// - Throws: `notFound(id:)` when the record is absent or expired.
    static func setExpiration<T>(
        _ type: T.Type, id: String, key: [UInt8], _ expiration: CacheExpiration,
        schema: TypeSchema, context: CommitQueue.Context
    ) throws {
        guard let bytes = try context.txn.get(schema.records, key: key) else {
            throw LocalStorageError.notFound(id: id)
        }
        let view = try RecordDecoding.view(of: bytes, T.self, id: id)
        guard !view.isExpired(at: context.now) else { throw LocalStorageError.notFound(id: id) }
        var header = try view.header(in: schema, txn: context.txn)
        header.expiresAt = try expiration.expiresAt(now: context.now)
        try replaceHeader(of: view, with: header, key: key, schema: schema, txn: context.txn)
        _ = try context.voidLease(schema, id: key, leavesRecord: true)
        context.touch(schema, id: key)
    }

    /// Deletes the given records if they are (still) expired, publishing `.expired(id)`; a damaged one is
    /// left in place and logged.
    static func purge(
        keys: [[UInt8]], schema: TypeSchema, context: CommitQueue.Context,
        logger: (any StorageLogger)?
    ) throws {
        for key in keys {
            guard let bytes = try context.txn.get(schema.records, key: key) else { continue }
            let view: RecordView
            do {
                view = try RecordView(bytes)
            } catch {
                logger?.log(
                    level: .warning, message: "Left a damaged record in place instead of purging it",
                    metadata: [
                        "type": schema.name, "id": String(decoding: key, as: UTF8.self),
                        "error": "\(error)",
                    ])
                continue
            }
            guard view.isExpired(at: context.now) else { continue }
            try delete(key: key, schema: schema, txn: context.txn)
            context.log(schema, .expired, id: key)
            context.publish(
                PublishedChange(typeName: schema.name, kind: .expired(String(decoding: key, as: UTF8.self))))
        }
    }
}
