/// How many records of a type were indexed with each of its declarations, kept in the count tree's database
/// from layout 5 on (``TypeRegistry/declarationCountsLayout``) in place of the signature database's entry per
/// record (`s.<type#>`, about 18 bytes and a B-tree insert for each record).
///
/// The counter of a declaration is `type# ‖ FFFFFFFF ‖ 01 ‖ signature` (8 bytes, big-endian), beside the type's
/// payload bytes (`… ‖ 00`); it counts the records whose header is readable and names that declaration. It
/// changes in the same transaction as the records, so it is exact in every snapshot but after damage. A record
/// damaged on disk cannot always say which declaration it was counted under: whatever removes or replaces one takes
/// it off the records the last walk could not count (`… ‖ 02`) while there are some (a counter may then stay one too
/// high, never too low, but for a flipped bit that names another declaration), and otherwise counts the type's records
/// again at the end (``recountDeclarations(schema:txn:)``, O(records), as rare as damage); see
/// ``uncountDamaged(_:schema:txn:)``. A re-index whose walk of every record meets another number than the counters
/// sets them right too.
extension CountTree {
    /// The bytes every declaration counter of type `type` starts with.
    static func declarationCountPrefix(type: UInt32) -> [UInt8] {
        counterPrefix(type: type, slot: UInt32.max) + [1]
    }

    /// The counter of the records of type `type` indexed with the declaration `signature`.
    static func declarationCountKey(type: UInt32, signature: UInt64) -> [UInt8] {
        var key = declarationCountPrefix(type: type)
        key.appendBigEndian(signature)
        return key
    }

    /// Adds `delta` to the records counted under the declaration `signature`: nothing in a store that keeps
    /// signature entries instead (``TypeSchema/countsDeclarations``).
    static func addRecords(_ delta: Int, indexedWith signature: UInt64, schema: TypeSchema, txn: Transaction) throws {
        guard delta != 0, schema.countsDeclarations, let counts = schema.counts else { return }
        let key =
            signature == schema.signature
            ? schema.declarationCountKey : declarationCountKey(type: schema.number, signature: signature)
        try add(delta, toCounter: key, counts: counts, txn: txn)
    }

    /// The records of the type counted under each declaration (only those with some), in signature order.
    ///
    /// Complexity: O(declarations the type's records were indexed with).
    static func declarationCounts(schema: TypeSchema, txn: Transaction) throws -> [(signature: UInt64, count: Int)] {
        guard let counts = schema.counts else { return [] }
        let prefix = schema.declarationCountPrefix
        var found: [(signature: UInt64, count: Int)] = []
        try txn.withCursor(counts) { cursor in
            var entry = try cursor.seek(atLeast: prefix)
            while let current = entry, current.key.count == prefix.count + 8, current.key.starts(with: prefix) {
                let signature = current.key[prefix.count...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                found.append((signature, counterValue(current.value)))
                entry = try cursor.move(.next)
            }
        }
        return found
    }

    /// How many records the counters count under other declarations than `schema`'s: those a re-index would
    /// bring in line with it.
    static func recordsOfOtherDeclarations(schema: TypeSchema, txn: Transaction) throws -> Int {
        try declarationCounts(schema: schema, txn: txn).reduce(0) {
            $1.signature == schema.signature ? $0 : $0.adding(saturating: $1.count)
        }
    }

    /// Whether any record of the type is counted under another declaration than `schema`'s: a seek and at most
    /// two keys, on every indexed read (``Reindexer/hasStaleRecords(schema:txn:)``).
    static func hasRecordsOfOtherDeclarations(schema: TypeSchema, txn: Transaction) throws -> Bool {
        guard let counts = schema.counts else { return false }
        let prefix = schema.declarationCountPrefix
        let mine = schema.declarationCountKey
        return try txn.withCursor(counts) { cursor in
            guard let first = try cursor.seek(atLeast: prefix), first.key.starts(with: prefix) else { return false }
            guard first.key.elementsEqual(mine) else { return true }
            guard let next = try cursor.move(.next) else { return false }
            return next.key.starts(with: prefix)
        }
    }

    /// The counter of the type's records no declaration counter counts (``countedSignature(of:schema:txn:)`` is nil:
    /// damaged, or naming a declaration number the type lacks), as the last walk of every record found them: with it
    /// the counters add up to the records, which lets a re-index trust them.
    static func uncountedKey(type: UInt32) -> [UInt8] {
        counterPrefix(type: type, slot: UInt32.max) + [2]
    }

    /// The type's records the last walk of all of them could not count under a declaration.
    static func uncountedRecords(schema: TypeSchema, txn: Transaction) throws -> Int {
        guard let counts = schema.counts, let stored = try txn.get(counts, key: uncountedKey(type: schema.number))
        else { return 0 }
        return counterValue(stored)
    }

    /// Removes every declaration counter of the type, and its uncounted records' (its records are being removed or
    /// counted again).
    static func clearDeclarationCounts(schema: TypeSchema, txn: Transaction) throws {
        guard let counts = schema.counts else { return }
        let prefix = schema.declarationCountPrefix
        try txn.withCursor(counts) { cursor in
            while let current = try cursor.seek(atLeast: prefix), current.key.starts(with: prefix) {
                try cursor.deleteCurrent()
            }
        }
        try txn.delete(counts, key: uncountedKey(type: schema.number))
    }

    /// What the declaration counters should hold: the type's records by the declaration their headers name (a
    /// record whose header does not name one it can read is not counted). O(records): for `verify`, and for
    /// setting the counters right after a walk of every record.
    static func walkedDeclarationCounts(schema: TypeSchema, txn: Transaction) throws -> [UInt64: Int] {
        var tally: [UInt64: Int] = [:]
        try txn.withCursor(schema.records) { cursor in
            var entry = try cursor.move(.first)
            while let record = entry {
                if let signature = try countedSignature(of: record.value, schema: schema, txn: txn) {
                    tally[signature, default: 0] += 1
                }
                entry = try cursor.move(.next)
            }
        }
        return tally
    }

    /// The declaration a stored record is counted under: the signature its header names, or nil when the header is
    /// damaged or names a declaration number the type's description lacks.
    static func countedSignature(
        of bytes: UnsafeRawBufferPointer, schema: TypeSchema, txn: Transaction
    ) throws -> UInt64? {
        guard let view = StoredRecord(bytes).view else { return nil }
        do {
            return try view.signature(in: schema, txn: txn)
        } catch LocalStorageError.decodingFailed {
            return nil
        }
    }

    /// Uncounts a damaged record that is about to be removed or replaced, under the declaration its header still
    /// names when that much of it reads (a value of an index the type lacks, a damaged payload). A record that cannot
    /// say is taken off the uncounted records while the last walk left some (it was most likely one of them; if not,
    /// the declaration it was counted under stays one too high, which costs a re-index a longer walk and never hides a
    /// stale record). Returns true when none are left (its bytes were damaged after it was counted): the caller then
    /// counts the type again at the end of its work (``recountDeclarations(schema:txn:)``), which counts every other
    /// damaged record as uncounted, so that removing many of them costs one walk, not one each (review-68 #5).
    static func uncountDamaged(_ bytes: UnsafeRawBufferPointer, schema: TypeSchema, txn: Transaction) throws -> Bool {
        guard schema.countsDeclarations else { return false }
        if let signature = try countedSignature(of: bytes, schema: schema, txn: txn) {
            try addRecords(-1, indexedWith: signature, schema: schema, txn: txn)
            return false
        }
        guard let counts = schema.counts, try uncountedRecords(schema: schema, txn: txn) > 0 else { return true }
        try add(-1, toCounter: uncountedKey(type: schema.number), counts: counts, txn: txn)
        return false
    }

    /// Sets the type's declaration counters from its records' headers: after removing or replacing a damaged record
    /// that cannot say where it was counted while no uncounted record is left to take it off.
    /// O(records); nothing in a store of layout 4 or older.
    static func recountDeclarations(schema: TypeSchema, txn: Transaction) throws {
        guard schema.countsDeclarations else { return }
        schema.runtime.declarationRecounts.add(1, ordering: .relaxed)
        try setDeclarationCounts(try walkedDeclarationCounts(schema: schema, txn: txn), schema: schema, txn: txn)
    }

    /// Sets the type's declaration counters to `tally` (signature → records), a walk's of every record, and its
    /// uncounted records to the rest of the type's records.
    static func setDeclarationCounts(_ tally: [UInt64: Int], schema: TypeSchema, txn: Transaction) throws {
        guard schema.countsDeclarations, let counts = schema.counts else { return }
        try clearDeclarationCounts(schema: schema, txn: txn)
        for (signature, count) in tally where count > 0 {
            try add(
                count, toCounter: declarationCountKey(type: schema.number, signature: signature), counts: counts,
                txn: txn)
        }
        let uncounted = try txn.entryCount(schema.records) - tally.values.reduce(0) { $0 + max($1, 0) }
        try add(uncounted, toCounter: uncountedKey(type: schema.number), counts: counts, txn: txn)
    }
}
