/// When each record was last used, for least-recently-used eviction: two store-wide databases,
/// `access` (`type# ‖ clock` → record key, sorted duplicates) and `access.of` (`type# ‖ record key` →
/// clock). The clock is a logical one kept in `meta` (`access.clock`), advanced by one per use the writer
/// folds in, so uses order exactly as they were folded.
/// Keys of the form `type# ‖ record key` are ``TypedKey``s: an id too long for an LMDB key is named by a
/// prefix and a hash.
struct AccessIndex {
    static let byClockName = "access"
    static let byRecordName = "access.of"
    static let clockKey: [UInt8] = Array("access.clock".utf8)

    let byClock: Database
    let byRecord: Database
    let meta: Database

    /// Opens (creating) the databases; writer transactions only.
    static func open(_ txn: Transaction) throws -> AccessIndex {
        guard let byClock = try txn.openDatabase(byClockName, sortedDuplicates: true, create: true),
            let byRecord = try txn.openDatabase(byRecordName, create: true),
            let meta = try txn.openDatabase(TypeRegistry.metaName, create: false)
        else {
            throw LMDBError.notFound("mdb_dbi_open")
        }
        return AccessIndex(byClock: byClock, byRecord: byRecord, meta: meta)
    }

    func clock(_ txn: Transaction) throws -> UInt64 {
        guard let stored = try txn.get(meta, key: AccessIndex.clockKey), stored.count == 8 else { return 0 }
        return UInt64(bigEndian: stored.loadUnaligned(as: UInt64.self))
    }

    func setClock(_ clock: UInt64, _ txn: Transaction) throws {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(clock)
        try txn.put(meta, key: AccessIndex.clockKey, value: bytes)
    }

    private static func clockKey(_ type: UInt32, _ clock: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12)
        bytes.appendBigEndian(type)
        bytes.appendBigEndian(clock)
        return bytes
    }

    /// The clock of a record's last use, or nil when it has none.
    func clock(type: UInt32, key: [UInt8], txn: Transaction) throws -> UInt64? {
        guard let stored = try txn.get(byRecord, key: TypedKey.make(type: type, id: key)), stored.count == 8 else {
            return nil
        }
        return UInt64(bigEndian: stored.loadUnaligned(as: UInt64.self))
    }

    /// Makes `clock` a record's last use.
    func set(type: UInt32, key: [UInt8], clock: UInt64, txn: Transaction) throws {
        try remove(type: type, key: key, txn: txn)
        var value: [UInt8] = []
        value.appendBigEndian(clock)
        try txn.put(byRecord, key: TypedKey.make(type: type, id: key), value: value)
        try txn.put(byClock, key: AccessIndex.clockKey(type, clock), value: key)
    }

    /// Forgets a record's use.
    func remove(type: UInt32, key: [UInt8], txn: Transaction) throws {
        // An empty index (the adaptive policy's stores, unless an LRU process wrote it) has nothing to look up.
        guard try txn.entryCount(byRecord) > 0, let old = try clock(type: type, key: key, txn: txn) else { return }
        try txn.delete(byRecord, key: TypedKey.make(type: type, id: key))
        try txn.delete(byClock, key: AccessIndex.clockKey(type, old), value: key)
    }

    /// Forgets the uses of every record of a type.
    func removeAll(type: UInt32, txn: Transaction) throws {
        var prefix: [UInt8] = []
        prefix.appendBigEndian(type)
        for database in [byClock, byRecord] {
            try txn.withCursor(database) { cursor in
                while let current = try cursor.seek(atLeast: prefix), current.key.starts(with: prefix) {
                    try cursor.deleteCurrent()
                }
            }
        }
    }

    /// The least recently used record of a type that still exists and is not skipped, with its clock. Uses
    /// of records deleted behind the index's back (by a process that does not track them) are dropped.
    func oldest(
        type: UInt32, records: Database, skipping: Set<[UInt8]>, marks: ClockOrderedWalk.Marks? = nil,
        txn: Transaction
    ) throws -> (key: [UInt8], clock: UInt64)? {
        var prefix: [UInt8] = []
        prefix.appendBigEndian(type)
        let (found, stale) = try ClockOrderedWalk.oldest(
            under: prefix, in: byClock, records: records, skipping: skipping, marks: marks, txn: txn)
        for key in stale { try remove(type: type, key: key, txn: txn) }
        return found
    }
}
