/// The records ``StorageEvictionPolicy/adaptive`` evicted lately, which size its window: when a new record
/// is one of them, a larger window would have kept it (it was a window candidate the sketch turned away)
/// or a larger main part would have (it was evicted from probation or protected). ARC sizes its lists the
/// same way from its ghost lists.
///
/// Two lists, each of the latest quarter-capacity records of its kind, oldest first, in two store-wide
/// databases: `adaptive.ghost` (`list ‖ clock` → `type# ‖ record key`) and `adaptive.ghost.of`
/// (`type# ‖ record key` → `list ‖ clock ‖ last use`, the last use being the queues' clock when the record
/// was last placed; stores of earlier versions hold `list ‖ clock`). A record is in one list at most. The
/// clock and each list's length are kept in `meta` (`adaptive.ghost.clock`, `adaptive.ghost.n ‖ list`).
///
/// One value per writer transaction; the clock and the lengths go through the transaction's ``MetaIntegers``.
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
    static let clockKey = MetaIntegers.Key("adaptive.ghost.clock")
    static let countPrefix: [UInt8] = Array("adaptive.ghost.n".utf8)
    /// The fewest records a list keeps, however few the evicting scope holds.
    static let fewestKept = 64

    let txn: Transaction
    let byClock: Database
    let byRecord: Database
    let integers: MetaIntegers
    /// The most records a list holds.
    let limit: Int

    init(txn: Transaction, integers: MetaIntegers, limit: Int) throws {
        guard let byClock = try txn.openDatabase(AdaptiveGhosts.byClockName, create: true),
            let byRecord = try txn.openDatabase(AdaptiveGhosts.byRecordName, create: true)
        else {
            throw LMDBError.notFound("mdb_dbi_open")
        }
        self.txn = txn
        self.byClock = byClock
        self.byRecord = byRecord
        self.integers = integers
        self.limit = max(1, limit)
    }

    /// Puts an evicted record at the end of `list`, taking it out of any list it was in, and drops the
    /// list's oldest records beyond the limit, or beyond a quarter of the `held` records the evicting scope
    /// holds (at least ``fewestKept``) when that is less: a `maxRecords` far above what `maxBytes` lets the
    /// store hold would otherwise let the lists grow the file with every eviction.
    ///
    /// `lastUse` is the queues' clock when the record was last placed in a queue (its last use, or a move).
    func add(type: UInt32, key: [UInt8], to list: List, held: Int, lastUse: UInt64) throws {
        let limit = min(self.limit, max(AdaptiveGhosts.fewestKept, held / 4))
        try remove(type: type, key: key)
        let clock = try integers.tick(AdaptiveGhosts.clockKey)
        let record = TypedKey.make(type: type, id: key)
        var position: [UInt8] = [list.rawValue]
        position.appendBigEndian(clock)
        var value = position
        value.appendBigEndian(lastUse)
        try txn.put(byRecord, key: record, value: value)
        try txn.put(byClock, key: position, value: record)
        try adjust(list, by: 1)
        while try count(list) > limit {
            let oldest: [UInt8]? = try txn.withCursor(byClock) { cursor in
                guard let first = try cursor.seek(atLeast: [list.rawValue]), first.key.first == list.rawValue
                else { return nil }
                let record = Array(first.value)
                try cursor.deleteCurrent()
                return record
            }
            guard let oldest else {
                // The length in `meta` overstates the list: take the list as it is.
                try adjust(list, by: -(try count(list)))
                return
            }
            try txn.delete(byRecord, key: oldest)
            try adjust(list, by: -1)
        }
    }

    /// Takes a record out of the lists; returns the list it was in and the queues' clock at its last use
    /// (nil when an earlier version added it), or nil.
    @discardableResult
    func remove(type: UInt32, key: [UInt8]) throws -> (list: List, lastUse: UInt64?)? {
        let record = TypedKey.make(type: type, id: key)
        guard let stored = try txn.get(byRecord, key: record), stored.count == 9 || stored.count == 17,
            let list = List(rawValue: stored[0])
        else { return nil }
        let position = Array(stored.prefix(9))
        let lastUse =
            stored.count == 17 ? UInt64(bigEndian: stored.loadUnaligned(fromByteOffset: 9, as: UInt64.self)) : nil
        try txn.delete(byRecord, key: record)
        try txn.delete(byClock, key: position)
        try adjust(list, by: -1)
        return (list, lastUse)
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
        for value in positions {
            guard value.count == 9 || value.count == 17, let list = List(rawValue: value[0]) else { continue }
            try txn.delete(byClock, key: Array(value.prefix(9)))
            try adjust(list, by: -1)
        }
    }

    /// The length of `list`. A damaged one past any real length is capped; trimming then finds the list
    /// shorter and sets the length from what is there.
    private func count(_ list: List) throws -> Int { try integers.count(AdaptiveGhosts.countKey(list)) }

    private func adjust(_ list: List, by delta: Int) throws {
        try integers.adjust(AdaptiveGhosts.countKey(list), by: delta)
    }

    private static let countKeys = List.allCases.map { MetaIntegers.Key(countPrefix + [$0.rawValue]) }

    private static func countKey(_ list: List) -> MetaIntegers.Key { countKeys[Int(list.rawValue)] }
}
