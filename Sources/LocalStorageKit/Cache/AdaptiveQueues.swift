/// Where each record stands for ``StorageEvictionPolicy/adaptive``: one of three queues (the window of
/// new records, probation, protected), least recently used first. Two store-wide databases:
/// `adaptive.queue` (`type# ‖ queue ‖ clock` → record key, sorted duplicates) and `adaptive.of`
/// (`type# ‖ record key` → `queue ‖ clock`); the clock is a logical one in `meta` (`adaptive.clock`),
/// advanced by one per placement; each type's queue lengths are counted in `meta` (`adaptive.n ‖ type# ‖
/// queue`).
///
/// One value per writer transaction; the clock and the counts go through the transaction's ``MetaIntegers``.
/// Keys of the form `type# ‖ record key` are ``TypedKey``s: an id too long for an LMDB key is named by a
/// prefix and a hash.
final class AdaptiveQueues {
    enum Queue: UInt8, CaseIterable {
        case window = 0
        case probation = 1
        case protected = 2
    }

    static let byClockName = "adaptive.queue"
    static let byRecordName = "adaptive.of"
    static let clockKey = MetaIntegers.Key("adaptive.clock")
    static let countPrefix: [UInt8] = Array("adaptive.n".utf8)

    let txn: Transaction
    let byClock: Database
    let byRecord: Database
    let integers: MetaIntegers
    /// Each type's three queue-length keys, made at the type's first use in the transaction.
    private var countKeys: [UInt32: [MetaIntegers.Key]] = [:]
    /// The last type asked about and its keys: a transaction mostly evicts from one type.
    private var lastCountKeys: (type: UInt32, keys: [MetaIntegers.Key])?

    init(txn: Transaction, integers: MetaIntegers) throws {
        guard let byClock = try txn.openDatabase(AdaptiveQueues.byClockName, sortedDuplicates: true, create: true),
            let byRecord = try txn.openDatabase(AdaptiveQueues.byRecordName, create: true)
        else {
            throw LMDBError.notFound("mdb_dbi_open")
        }
        self.txn = txn
        self.byClock = byClock
        self.byRecord = byRecord
        self.integers = integers
    }

    /// The queue a record is in, or nil when it is in none.
    func queue(type: UInt32, key: [UInt8]) throws -> Queue? {
        try position(type: type, key: key)?.queue
    }

    /// How many records of a type are in a queue.
    func count(type: UInt32, _ queue: Queue) throws -> Int {
        try integers.count(countKey(type, queue))
    }

    /// The queues' clock: how many times a record was placed in a queue, store-wide.
    func clock() throws -> UInt64 { try integers.value(AdaptiveQueues.clockKey) }

    /// Puts a record at the most recent end of a queue, taking it out of the one it was in.
    func place(type: UInt32, key: [UInt8], in queue: Queue) throws {
        try place(type: type, key: key, in: queue, from: position(type: type, key: key))
    }

    /// Puts a record at the most recent end of a queue, taking it out of `old`, its ``position(type:key:)``
    /// looked up in this transaction with nothing placing or removing the record since (nil: in no queue). A
    /// position older than that would leave the record's former queue entry behind and miscount the queues.
    func place(type: UInt32, key: [UInt8], in queue: Queue, from old: Position?) throws {
        // Its `adaptive.of` entry is overwritten below: only the queue's entry and length change.
        if let old {
            try txn.delete(byClock, key: AdaptiveQueues.queueKey(type, old.queue, old.clock), value: key)
            try integers.adjust(countKey(type, old.queue), by: -1)
        }
        let clock = try integers.tick(AdaptiveQueues.clockKey)
        var value: [UInt8] = [queue.rawValue]
        value.appendBigEndian(clock)
        try txn.put(byRecord, key: TypedKey.make(type: type, id: key), value: value)
        try txn.put(byClock, key: AdaptiveQueues.queueKey(type, queue, clock), value: key)
        try integers.adjust(countKey(type, queue), by: 1)
    }

    /// Takes a record out of its queue.
    func remove(type: UInt32, key: [UInt8]) throws {
        guard let old = try position(type: type, key: key) else { return }
        try txn.delete(byRecord, key: TypedKey.make(type: type, id: key))
        try txn.delete(byClock, key: AdaptiveQueues.queueKey(type, old.queue, old.clock), value: key)
        try integers.adjust(countKey(type, old.queue), by: -1)
    }

    /// Takes every record of a type out of the queues.
    func removeAll(type: UInt32) throws {
        var prefix: [UInt8] = []
        prefix.appendBigEndian(type)
        for database in [byClock, byRecord] {
            try txn.withCursor(database) { cursor in
                while let current = try cursor.seek(atLeast: prefix), current.key.starts(with: prefix) {
                    try cursor.deleteCurrent()
                }
            }
        }
        for queue in Queue.allCases {
            let key = countKey(type, queue)
            try integers.adjust(key, by: -(try integers.count(key)))
        }
    }

    /// The least recently placed record of a type's queue that still exists and is not skipped, with its
    /// clock. Entries of records deleted behind the queues' back (by a process without limits) are dropped.
    func oldest(
        type: UInt32, _ queue: Queue, records: Database, skipping: Set<[UInt8]>, marks: ClockOrderedWalk.Marks? = nil
    ) throws -> (key: [UInt8], clock: UInt64)? {
        var prefix: [UInt8] = []
        prefix.appendBigEndian(type)
        prefix.append(queue.rawValue)
        let (found, stale) = try ClockOrderedWalk.oldest(
            under: prefix, in: byClock, records: records, skipping: skipping, marks: marks, txn: txn)
        for key in stale { try remove(type: type, key: key) }
        return found
    }

    /// Where a record stands: its queue and the clock of its placing there.
    typealias Position = (queue: Queue, clock: UInt64)

    /// The record's position, or nil when it is in no queue.
    func position(type: UInt32, key: [UInt8]) throws -> Position? {
        guard let stored = try txn.get(byRecord, key: TypedKey.make(type: type, id: key)), stored.count == 9,
            let queue = Queue(rawValue: stored[0])
        else { return nil }
        return (queue, UInt64(bigEndian: UnsafeRawBufferPointer(rebasing: stored[1...]).loadUnaligned(as: UInt64.self)))
    }

    /// The `meta` keys of a type's queue lengths, made once per type in the transaction.
    private func countKey(_ type: UInt32, _ queue: Queue) -> MetaIntegers.Key {
        if let last = lastCountKeys, last.type == type { return last.keys[Int(queue.rawValue)] }
        let keys: [MetaIntegers.Key]
        if let known = countKeys[type] {
            keys = known
        } else {
            keys = Queue.allCases.map { queue in
                var bytes = AdaptiveQueues.countPrefix
                bytes.appendBigEndian(type)
                bytes.append(queue.rawValue)
                return MetaIntegers.Key(bytes)
            }
            countKeys[type] = keys
        }
        lastCountKeys = (type, keys)
        return keys[Int(queue.rawValue)]
    }

    private static func queueKey(_ type: UInt32, _ queue: Queue, _ clock: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(13)
        bytes.appendBigEndian(type)
        bytes.append(queue.rawValue)
        bytes.appendBigEndian(clock)
        return bytes
    }
}
