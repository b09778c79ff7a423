/// Writing records exactly as the shared tier holds them (docs/DESIGN.md, "Sharing a cache between hosts").
extension RecordWriter {
    /// Whether a record with `payloadBytes` (as the shared tier holds it) exceeds this store's `maxBytes` (its
    /// type's or the store's): another instance may write it under wider limits, and this one cannot keep it.
    static func isTooLargeToKeep(_ payloadBytes: Int, schema: TypeSchema, context: CommitQueue.Context) -> Bool {
        guard let limit = Evictor.byteLimit(of: schema, storeMaxBytes: context.storeMaxBytes) else { return false }
        return payloadBytes > limit
    }

    /// Stores `bytes` (a whole record: header and payload, as the shared tier holds it) under `key`, keeping
    /// the record's entries in step and publishing `.inserted` or `.updated` with `value` (or, without one, the
    /// id for observers to read), unless the store
    /// already holds exactly these bytes. The header's timestamps and expiry are kept as they are, so every
    /// instance's copy is the same record. Returns whether anything changed.
    ///
    /// With `announce` false (a near-cache fill, which is not a change) nothing is logged or published. With
    /// `asNew` a live record it replaces is announced as an insert all the same (a fill's copy the observers
    /// never heard of).
    ///
    /// A record larger than this store's `maxBytes` is not kept (``isTooLargeToKeep(_:schema:context:)``): a copy
    /// of the id it held is deleted instead (announced), and a fill keeps nothing.
    ///
    /// - Throws: `decodingFailed` when `bytes` is not a record.
    @discardableResult
    static func putReplica(
        _ bytes: [UInt8], key: [UInt8], value: (any Sendable)?, schema: TypeSchema,
        context: CommitQueue.Context, announce: Bool = true, asNew: Bool = false
    ) throws -> Bool {
        let txn = context.txn
        var bytes = bytes
        // The shared tier's records name their index values (slot numbers are each store's own).
        var header = try bytes.withUnsafeBytes { buffer in
            try RecordDecoding.view(
                of: buffer, typeName: schema.name, id: String(decoding: key, as: UTF8.self), sharedTier: true
            )
            .header(in: schema, txn: txn)
        }
        // The shared tier's payloads are never compressed (each store trains its own dictionaries): one that says
        // so came from elsewhere, and its frame could claim gigabytes for a read to allocate.
        guard !header.envelope.contains(.compressed) else {
            throw LocalStorageError.decodingFailed(
                reason: "\(schema.name) \"\(String(decoding: key, as: UTF8.self))\": the shared tier's copy is marked "
                    + "compressed, which no instance writes; it was not stored")
        }
        // Written with a declaration this store does not describe (another app version's, on another host): its
        // entries here are the newest declaration's, so it carries the unknown signature, stale to every declaration,
        // as an import does. With the writer's signature it read as current once this host registered that
        // declaration, without entries in the indexes it adds (review-69 #1).
        let stored = try schema.storedSignature(for: header.signature, txn: txn)
        if stored != header.signature {
            header.signature = stored
            bytes.replaceSubrange(
                RecordHeader.namedSignatureOffset..<RecordHeader.namedSignatureOffset + 8,
                with: withUnsafeBytes(of: stored.littleEndian) { Array($0) })
        }
        var replacesLiveRecord = false
        var oldValues: [StoredIndexValue]?
        var regionKnown = true
        var replaced: RecordHeader?
        var existingWasDamaged = false
        /// Whether the record replaces a live one that differs from it in its expiry alone.
        var onlyExpiryChanged = false
        var payloadBytes = bytes.withUnsafeBytes { payloadSize(of: $0) }
        if isTooLargeToKeep(payloadBytes, schema: schema, context: context) {
            // Written by an instance with wider limits: no eviction could make room, so none is made; the copy this
            // store held of the id is stale, and goes as an eviction would take it (a `.deleted` to change streams).
            guard announce else { return false }
            if try delete(id: String(decoding: key, as: UTF8.self), key: key, schema: schema, context: context) {
                return true
            }
            // Not held: nothing here changed, but a load of the id waiting here and live queries (which run on the
            // server) must hear of the write, as of a remote delete of a record not held.
            context.publish(PublishedChange(typeName: schema.name, kind: .touched))
            return false
        }
        if let existing = try txn.get(schema.records, key: key) {
            if existing.elementsEqual(bytes) { return false }
            payloadBytes -= payloadSize(of: existing)
            // A damaged local copy is replaced by the server's record.
            switch try StoredRecord(existing).header(in: schema, txn: txn) {
            case .readable(let view, let old):
                if !view.isExpired(at: context.now) {
                    replacesLiveRecord = true
                    onlyExpiryChanged = RecordWriter.differInExpiryAlone(existing, bytes)
                    oldValues = old.indexValues
                    if old.signature != header.signature { regionKnown = false }
                }
                replaced = old
            case .damaged:
                existingWasDamaged = try CountTree.uncountDamaged(existing, schema: schema, txn: txn)
                try removeEntriesOfDamagedRecord(key: key, schema: schema, txn: txn)
                regionKnown = false
            }
        }
        try txn.put(schema.records, key: key, value: bytes)
        try CountTree.addPayloadBytes(payloadBytes, schema: schema, txn: txn)
        if let replaced {
            try replaceEntries(of: replaced, with: header, key: key, schema: schema, txn: txn)
        } else {
            try addEntries(of: header, key: key, schema: schema, txn: txn)
        }
        // Its damaged predecessor could not say which declaration it was counted under.
        if existingWasDamaged { try CountTree.recountDeclarations(schema: schema, txn: txn) }
        guard announce else { return true }
        if onlyExpiryChanged && !asNew {
            // A new time to live (`setExpiration` on any instance) is no update, as in a store without a shared
            // tier: live queries rerun, change streams stay silent. Like any write of the id it voids a load of it
            // under way (a refresh), as the server's put voided the server's lease.
            _ = try context.voidLease(schema, id: key, leavesRecord: true)
            context.touch(schema, id: key)
            return true
        }
        if asNew { replacesLiveRecord = false }
        context.log(schema, replacesLiveRecord ? .updated : .inserted, id: key)
        if context.isObserved(schema.name) {
            let kind: PublishedChange.Kind
            if let value {
                kind = replacesLiveRecord ? .updated(value) : .inserted(value)
            } else {
                let id = String(decoding: key, as: UTF8.self)
                kind = replacesLiveRecord ? .externalUpdated(id) : .externalInserted(id)
            }
            let region =
                regionKnown
                ? PublishedChange.Region(old: oldValues, new: header.indexValues, signature: header.signature) : nil
            context.publish(PublishedChange(typeName: schema.name, kind: kind, region: region, recordKey: key))
        }
        return true
    }

    /// Whether two whole records (both read as headers of the named layout) differ in their expiry alone: the
    /// bytes at 24..<32 of the header (``RecordHeader``).
    static func differInExpiryAlone(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Bool {
        guard a.count == b.count, a.count >= RecordHeader.fixedLength, a.first == RecordHeader.magic,
            b.first == RecordHeader.magic
        else { return false }
        return b.withUnsafeBytes { b in
            a[..<24].elementsEqual(b[..<24]) && a[32...].elementsEqual(b[32...])
        }
    }
}
