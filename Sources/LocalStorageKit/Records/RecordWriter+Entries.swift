/// A record's entries: update time, expiry, declaration (a signature entry, or a count from layout 5 on) and index
/// entries, with the count tree kept in step.
extension RecordWriter {
    /// Adds the update-time, expiry, declaration and index entries of a record: index entries in the indexes
    /// of the declaration its header names (this schema's, but for imported records).
    static func addEntries(of header: RecordHeader, key: [UInt8], schema: TypeSchema, txn: Transaction) throws {
        if try schema.keepsUpdateOrder(txn) { try txn.put(schema.updated, key: timeKey(header.updatedAt), value: key) }
        if header.expiresAt != 0 {
            try txn.put(schema.expiry, key: timeKey(header.expiresAt), value: key)
        }
        try noteDeclaration(of: header, adding: true, key: key, schema: schema, txn: txn)
        let indexes =
            header.signature == schema.signature
            ? schema.indexes : try schema.declaredIndexes(signature: header.signature, txn: txn) ?? schema.indexes
        for index in indexes {
            try addEntry(indexKey(of: header, for: index), id: key, to: index, schema: schema, txn: txn)
        }
    }

    /// Counts a record under the declaration its header names, or uncounts it (`adding` false): its signature
    /// entry in a store of layout 4 or older, its declaration's counter from layout 5 on.
    private static func noteDeclaration(
        of header: RecordHeader, adding: Bool, key: [UInt8], schema: TypeSchema, txn: Transaction
    ) throws {
        if schema.countsDeclarations {
            try CountTree.addRecords(adding ? 1 : -1, indexedWith: header.signature, schema: schema, txn: txn)
        } else if adding {
            try txn.put(schema.signatures, key: signatureKey(header.signature), value: key)
        } else {
            try txn.delete(schema.signatures, key: signatureKey(header.signature), value: key)
        }
    }

    /// Removes the update-time, expiry, declaration and index entries of a record, from every index the
    /// record may be in whatever declaration it was indexed with (removing an absent pair does nothing). With
    /// `deferred`, the removed index entries are noted there instead of uncounted one by one. `keepsUpdateOrder`:
    /// ``TypeSchema/keepsUpdateOrder(_:)``, when the caller asked it once for many records.
    static func removeEntries(
        of header: RecordHeader, key: [UInt8], schema: TypeSchema,
        txn: Transaction, deferred: DeletedEntries? = nil, keepsUpdateOrder: Bool? = nil
    ) throws {
        if try keepsUpdateOrder ?? schema.keepsUpdateOrder(txn) {
            try txn.delete(schema.updated, key: timeKey(header.updatedAt), value: key)
        }
        if header.expiresAt != 0 {
            try txn.delete(schema.expiry, key: timeKey(header.expiresAt), value: key)
        }
        try noteDeclaration(of: header, adding: false, key: key, schema: schema, txn: txn)
        for index in try schema.indexesHolding(signature: header.signature, txn: txn) {
            let entryKey = indexKey(of: header, for: index)
            if let deferred {
                if try txn.delete(index.dbi, key: entryKey, value: key) { deferred.note(entryKey, id: key, in: index) }
            } else {
                try removeEntry(entryKey, id: key, from: index, schema: schema, txn: txn)
            }
        }
    }

    /// Moves a replaced record's entries to those of its new header, touching only what differs: a save that
    /// changes no indexed value rewrites neither the index entries nor their counters (each of which dirtied
    /// a page of its database in the commit). An entry that stays is checked with a read and added again if
    /// it is missing, as removing and adding it did.
    static func replaceEntries(
        of old: RecordHeader, with new: RecordHeader, key: [UInt8], schema: TypeSchema, txn: Transaction
    ) throws {
        guard old.signature == schema.signature, new.signature == schema.signature else {
            try removeEntries(of: old, key: key, schema: schema, txn: txn)
            try addEntries(of: new, key: key, schema: schema, txn: txn)
            return
        }
        if try schema.keepsUpdateOrder(txn) {
            try replacePair(in: schema.updated, timeKey(old.updatedAt), with: timeKey(new.updatedAt), id: key, txn: txn)
        }
        if old.expiresAt != new.expiresAt {
            if old.expiresAt != 0 { try txn.delete(schema.expiry, key: timeKey(old.expiresAt), value: key) }
            if new.expiresAt != 0 { try txn.put(schema.expiry, key: timeKey(new.expiresAt), value: key) }
        } else if new.expiresAt != 0 {
            try replacePair(in: schema.expiry, timeKey(old.expiresAt), with: timeKey(new.expiresAt), id: key, txn: txn)
        }
        if !schema.countsDeclarations {
            let signature = schema.signatureKey
            try replacePair(in: schema.signatures, signature, with: signature, id: key, txn: txn)
        }
        for index in schema.indexes {
            let oldKey = indexKey(of: old, for: index)
            let newKey = indexKey(of: new, for: index)
            if oldKey == newKey {
                let present = try newKey.withUnsafeBytes { k in
                    try key.withUnsafeBytes { v in try txn.contains(index.dbi, key: k, value: v) }
                }
                if present { continue }
            } else {
                try removeEntry(oldKey, id: key, from: index, schema: schema, txn: txn)
            }
            try addEntry(newKey, id: key, to: index, schema: schema, txn: txn)
        }
    }

    /// Replaces the pair (`old`, `id`) with (`new`, `id`) in a sorted-duplicates database; when the keys are the
    /// same, only adds the pair if it is missing.
    private static func replacePair(
        in database: Database, _ old: [UInt8], with new: [UInt8], id: [UInt8], txn: Transaction
    ) throws {
        if old == new {
            let present = try new.withUnsafeBytes { k in
                try id.withUnsafeBytes { v in try txn.contains(database, key: k, value: v) }
            }
            if present { return }
        } else {
            try txn.delete(database, key: old, value: id)
        }
        try txn.put(database, key: new, value: id)
    }

    /// Adds one index entry and counts it in the count tree.
    static func addEntry(
        _ entryKey: [UInt8], id: [UInt8], to index: TypeSchema.Index, schema: TypeSchema,
        txn: Transaction
    ) throws {
        let added = try entryKey.withUnsafeBytes { k in
            try id.withUnsafeBytes { v in try txn.insert(index.dbi, key: k, value: v) }
        }
        if added, let counts = schema.counts {
            try entryKey.withUnsafeBytes { try CountTree.adjust($0, by: 1, index: index, counts: counts, txn: txn) }
        }
    }

    /// Removes one index entry, if present, and uncounts it.
    static func removeEntry(
        _ entryKey: [UInt8], id: [UInt8], from index: TypeSchema.Index, schema: TypeSchema,
        txn: Transaction
    ) throws {
        if try txn.delete(index.dbi, key: entryKey, value: id), let counts = schema.counts {
            try entryKey.withUnsafeBytes { try CountTree.adjust($0, by: -1, index: index, counts: counts, txn: txn) }
        }
    }

    /// Removes every entry pointing at `key` from every secondary database of the type, by walking them:
    /// for a record whose header is damaged, so it cannot say where its entries are. O(entries), rare. (Its
    /// declaration counter is the caller's: ``CountTree/uncountDamaged(_:schema:txn:)``.)
    static func removeEntriesOfDamagedRecord(key: [UInt8], schema: TypeSchema, txn: Transaction) throws {
        let indexes = try schema.current(in: txn)?.allIndexes ?? schema.allIndexes
        let pointsAtKey = { (id: UnsafeRawBufferPointer) in id.elementsEqual(key) }
        for dbi in [schema.updated, schema.expiry, schema.signatures] {
            for entry in try entries(of: dbi, pointingAt: pointsAtKey, txn: txn) {
                try txn.delete(dbi, key: entry.key, value: key)
            }
        }
        for index in indexes {
            for entry in try entries(of: index.dbi, pointingAt: pointsAtKey, txn: txn) {
                try removeEntry(entry.key, id: key, from: index, schema: schema, txn: txn)
            }
        }
    }

    /// The entries (key, record id) of a secondary database whose record id passes `matches`, by walking it.
    /// O(entries): for records whose headers cannot say where their entries are.
    static func entries(
        of dbi: Database, pointingAt matches: (UnsafeRawBufferPointer) -> Bool, txn: Transaction
    ) throws -> [(key: [UInt8], id: [UInt8])] {
        var found: [(key: [UInt8], id: [UInt8])] = []
        try txn.withCursor(dbi) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry {
                if matches(current.value) { found.append((Array(current.key), Array(current.value))) }
                entry = try cursor.move(.next)
            }
        }
        return found
    }
}
