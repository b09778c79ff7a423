/// The records ``StorageEvictionPolicy/adaptive`` evicted lately, which size its window: when a new record
/// is one of them, a larger window would have kept it (it was a window candidate the sketch turned away)
/// or a larger main part would have (it was evicted from probation or protected). ARC sizes its lists the
/// same way from its ghost lists.
///
/// Two lists, each of the latest quarter-capacity records of its kind, oldest first, in two store-wide
/// databases: `adaptive.ghost` (`list ‖ clock` → `type# ‖ record key`) and `adaptive.ghost.of`
/// (`type# ‖ record key` → `list ‖ clock`). A record is in one list at most. The clock and each list's
/// length are kept in `meta` (`adaptive.ghost.clock`, `adaptive.ghost.n ‖ list`).
///
/// One value per writer transaction: the clock and the lengths are cached and written by ``flush()``.
/// Keys of the form `type# ‖ record key` are ``TypedKey``s: an id too long for an LMDB key is named by a
/// prefix and a hash.
final class AdaptiveGhosts {
    enum List: UInt8, CaseIterable {
        /// Window candidates the sketch turned away.
        case window = 0
        /// Records evicted from probation or protected.
        case main = 1
    }

    static let byClockName = "adaptive.ghost"
    static let byRecordName = "adaptive.ghost.of"
    static let clockKey: [UInt8] = Array("adaptive.ghost.clock".utf8)
    static let countPrefix: [UInt8] = Array("adaptive.ghost.n".utf8)

    let txn: Transaction
    let byClock: Database
    let byRecord: Database
    let meta: Database
    /// The most records a list holds.
    let limit: Int
    private var clock: UInt64
    private var clockChanged = false
    private var counts: [List: Int] = [:]
    private var changedCounts: Set<List> = []

    init(txn: Transaction, meta: Database, limit: Int) throws {
        guard let byClock = try txn.openDatabase(AdaptiveGhosts.byClockName, create: true),
            let byRecord = try txn.openDatabase(AdaptiveGhosts.byRecordName, create: true)
        else {
            throw LMDBError.notFound("mdb_dbi_open")
        }
        self.txn = txn
        self.byClock = byClock
        self.byRecord = byRecord
        self.meta = meta
        self.limit = max(1, limit)
        clock = try AdaptiveGhosts.integer(meta, AdaptiveGhosts.clockKey, txn) ?? 0
    }

    /// Puts an evicted record at the end of `list`, taking it out of any list it was in, and drops the
    /// list's oldest records beyond the limit.
    func add(type: UInt32, key: [UInt8], to list: List) throws {
        _ = try remove(type: type, key: key)
        clock += 1
        clockChanged = true
        let record = TypedKey.make(type: type, id: key)
        var position: [UInt8] = [list.rawValue]
        position.appendBigEndian(clock)
        try txn.put(byRecord, key: record, value: position)
        try txn.put(byClock, key: position, value: record)
        try adjust(list, by: 1)
        while try count(list) > limit {
            let oldest: (position: [UInt8], record: [UInt8])? = try txn.withCursor(byClock) { cursor in
                guard let first = try cursor.seek(atLeast: [list.rawValue]), first.key.first == list.rawValue
                else { return nil }
                return (Array(first.key), Array(first.value))
            }
            guard let oldest else {
                // The length in `meta` overstates the list: take the list as it is.
                try adjust(list, by: -(try count(list)))
                return
            }
            try txn.delete(byClock, key: oldest.position)
            try txn.delete(byRecord, key: oldest.record)
            try adjust(list, by: -1)
        }
    }

    /// Takes a record out of the lists; returns the list it was in, or nil.
    func remove(type: UInt32, key: [UInt8]) throws -> List? {
        let record = TypedKey.make(type: type, id: key)
        guard let stored = try txn.get(byRecord, key: record), stored.count == 9, let list = List(rawValue: stored[0])
        else { return nil }
        let position = Array(stored)
        try txn.delete(byRecord, key: record)
        try txn.delete(byClock, key: position)
        try adjust(list, by: -1)
        return list
    }

    /// Takes every record of a type out of the lists (the type was cleared: its ids coming back are new).
    func removeAll(type: UInt32) throws {
        var prefix: [UInt8] = []
        prefix.appendBigEndian(type)
        var positions: [[UInt8]] = []
        try txn.withCursor(byRecord) { cursor in
            while let current = try cursor.seek(atLeast: prefix), current.key.starts(with: prefix) {
                positions.append(Array(current.value))
                try cursor.deleteCurrent()
            }
        }
        for position in positions {
            guard position.count == 9, let list = List(rawValue: position[0]) else { continue }
            try txn.delete(byClock, key: position)
            try adjust(list, by: -1)
        }
    }

    /// Writes the clock and the changed lengths.
    func flush() throws {
        if clockChanged {
            var bytes: [UInt8] = []
            bytes.appendBigEndian(clock)
            try txn.put(meta, key: AdaptiveGhosts.clockKey, value: bytes)
            clockChanged = false
        }
        for list in changedCounts {
            var bytes: [UInt8] = []
            bytes.appendBigEndian(UInt64(max(0, counts[list] ?? 0)))
            try txn.put(meta, key: AdaptiveGhosts.countKey(list), value: bytes)
        }
        changedCounts.removeAll()
    }

    private func count(_ list: List) throws -> Int {
        if let cached = counts[list] { return cached }
        // A damaged length past any real one is capped, so that adjusting it cannot overflow; trimming then
        // finds the list shorter and sets the length from what is there.
        let stored = Int(min(try AdaptiveGhosts.integer(meta, AdaptiveGhosts.countKey(list), txn) ?? 0, 1 << 48))
        counts[list] = stored
        return stored
    }

    private func adjust(_ list: List, by delta: Int) throws {
        guard delta != 0 else { return }
        counts[list] = max(0, try count(list) + delta)
        changedCounts.insert(list)
    }

    private static func countKey(_ list: List) -> [UInt8] { countPrefix + [list.rawValue] }

    private static func integer(_ meta: Database, _ key: [UInt8], _ txn: Transaction) throws -> UInt64? {
        guard let stored = try txn.get(meta, key: key), stored.count == 8 else { return nil }
        return UInt64(bigEndian: stored.loadUnaligned(as: UInt64.self))
    }
}
