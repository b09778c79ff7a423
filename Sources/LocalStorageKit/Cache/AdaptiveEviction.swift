/// ``StorageEvictionPolicy/adaptive`` inside one writer transaction: W-TinyLFU over the store's own
/// databases (docs/DESIGN.md, "Adaptive eviction").
///
/// A new record enters the window (1% to 99% of the records in the scope, sized by ``AdaptiveGhosts``;
/// least recently used first). When
/// the window is over its share and the scope is over a limit, the window's oldest record (the candidate)
/// meets probation's oldest (the victim): the one the frequency sketch has seen used less often is
/// evicted, and a winning candidate moves to probation. A record used again in probation moves to
/// protected (at most 86–90% of the records outside the window, or of the largest record limit while the
/// store holds fewer, down to 60% as the window grows; the overflow goes back to probation). When
/// the scope is under its limits the window's overflow moves to probation. A one-pass scan therefore
/// passes through the window and never displaces the records used often.
final class AdaptiveEviction {
    /// The protected queue's share of the records outside the window, in percent, for a window of
    /// `windowQuarters` (quarters of a record of `capacity`): 90 less 4 points for each whole percent of the
    /// records the window holds, at least 60: high while the window is small (a stable popular set: what is
    /// reused stays; 86 at the smallest window, 1% of a limit that is a multiple of 25). The ghost lists grow the window when popularity shifts; protected then gives way to the new
    /// favourites sooner (docs/DESIGN.md, "The protected share follows the window").
    static func protectedPercent(windowQuarters: Int, capacity: Int) -> Int {
        let windowPercent = windowQuarters * 100 / (4 * max(1, capacity))
        return max(60, 90 - 4 * windowPercent)
    }

    /// What a use of a record was: a read of a held record (a hit), a new record (a miss), or an update.
    enum Use { case read, insert, update }

    /// Where the window's size is kept, in quarters of a record for a full store (`meta`).
    static let windowKey = MetaIntegers.Key("adaptive.window.quarters")
    /// Where the records the window and the ghost lists are reckoned on are kept (`meta`): the largest
    /// record limit of the process that first ran the policy, so that every process reads the window's
    /// size alike whatever limits it has registered.
    static let capacityKey = MetaIntegers.Key("adaptive.capacity")
    /// The most records the policy reckons on: a larger limit is taken as this one, so that the window's and
    /// the sketch's arithmetic cannot overflow.
    static let largestCapacity = 1 << 40

    let queues: AdaptiveQueues
    let sketch: FrequencySketch
    let ghosts: AdaptiveGhosts
    /// The policy's integers in `meta`, written once at ``flush()``.
    private let integers: MetaIntegers
    private let records: (UInt32) throws -> Database?
    /// The largest record limit of this process (protected's share is reckoned on at least this many records).
    private let capacity: Int
    /// The records of `adaptive.capacity`: the window's size is a share of them, in quarters of a record.
    private let windowCapacity: Int
    /// The window's size for a full store, in quarters of a record: 1% to 99% of `windowCapacity`.
    private(set) var windowQuarters: Int

    /// - Parameters:
    ///   - capacity: the records the sketch is sized for when it is first created.
    ///   - records: the records database of a type number, nil for an unknown type.
    ///   - carried: the policy's integers as the writer's last commit left them (``carry()``).
    init(
        txn: Transaction, meta: Database, capacity: Int, carried: MetaIntegers.Carried?,
        records: @escaping (UInt32) throws -> Database?
    ) throws {
        let capacity = min(max(1, capacity), AdaptiveEviction.largestCapacity)
        let integers = MetaIntegers(txn: txn, meta: meta, carried: carried)
        queues = try AdaptiveQueues(txn: txn, integers: integers)
        sketch = try FrequencySketch(txn: txn, integers: integers, capacity: capacity)
        if let stored = try integers.stored(AdaptiveEviction.capacityKey).map(Int.init(clamping:)),
            (1...AdaptiveEviction.largestCapacity).contains(stored)
        {
            windowCapacity = stored
        } else {
            windowCapacity = capacity
            integers.set(AdaptiveEviction.capacityKey, to: UInt64(capacity))
        }
        ghosts = try AdaptiveGhosts(txn: txn, integers: integers, limit: windowCapacity / 4)
        self.integers = integers
        self.records = records
        self.capacity = capacity
        windowQuarters = AdaptiveEviction.window(
            Int(clamping: try integers.value(AdaptiveEviction.windowKey)), capacity: windowCapacity)
    }

    /// `quarters` brought within the window's bounds for a full store of `capacity` records: 1% and 99% of
    /// it, in quarters of a record.
    static func window(_ quarters: Int, capacity: Int) -> Int {
        let smallest = max(1, capacity * 4 / 100)
        return min(max(quarters, smallest), max(smallest, capacity * 4 * 99 / 100))
    }

    /// Counts a read or a write of a record (`times` reads of it in a row) and moves it as W-TinyLFU does: a new
    /// record into the window, a record in probation into protected, any other to the recent end of its queue.
    func use(type: UInt32, key: [UInt8], as use: Use, times: Int = 1) throws {
        if use == .insert { try adjustWindow(returning: type, key: key) }
        for _ in 0..<max(1, times) { try sketch.increment(type: type, key: key) }
        let position = try queues.position(type: type, key: key)
        switch position?.queue {
        case nil, .window:
            try queues.place(type: type, key: key, in: .window, from: position)
        case .probation:
            try queues.place(type: type, key: key, in: .protected, from: position)
            try demoteProtectedOverflow(type: type)
        case .protected:
            try queues.place(type: type, key: key, in: .protected, from: position)
        }
    }

    func forget(type: UInt32, key: [UInt8]) throws { try queues.remove(type: type, key: key) }

    /// A new record that was lately evicted moves the window by a quarter of a record: up when the sketch
    /// had turned it away from the window, down when it had been evicted from probation or protected.
    ///
    /// A turned-away record counts only when it comes back within 1.25 times as many uses (ticks of the queues'
    /// clock, which also moves when records change queues) as the records the window is reckoned on: one that
    /// comes back later, as each record of a loop a little longer than the cache does, would not have been kept
    /// by any window, and growing the window for it made the policy an LRU on loops (docs/DESIGN.md, "Loops and
    /// the window's ghosts").
    private func adjustWindow(returning type: UInt32, key: [UInt8]) throws {
        switch try ghosts.remove(type: type, key: key) {
        case (.window, let lastUse)?:
            if let lastUse, try queues.clock() &- lastUse > UInt64(windowCapacity + windowCapacity / 4) { return }
            windowQuarters = AdaptiveEviction.window(windowQuarters + 1, capacity: windowCapacity)
        case (.main, _)?: windowQuarters = AdaptiveEviction.window(windowQuarters - 1, capacity: windowCapacity)
        case nil: break
        }
    }

    func forgetAll(type: UInt32) throws {
        try queues.removeAll(type: type)
        try ghosts.removeAll(type: type)
    }

    /// The next record to evict from `scope`, which holds `total` records and is over a limit, among
    /// the records not in `excluded` (when `skipping`) or among all of them; nil when the queues hold
    /// none (records written by a process without limits are in no queue). `ghostsHeld`, the records the whole
    /// store holds, bounds the ghost lists (``AdaptiveGhosts/add(type:key:to:held:)``). `marks` are the eviction
    /// run's, for the walks that skip `excluded`.
    func victim(
        in scope: [TypeSchema], excluded: [UInt32: Set<[UInt8]>], total: Int, skipping: Bool, ghostsHeld: Int?,
        marks: ClockOrderedWalk.Marks? = nil
    ) throws -> (TypeSchema, [UInt8])? {
        // The ghost lists are the store's: they are bounded by what the whole store holds.
        let held = ghostsHeld ?? .max
        func oldest(_ queue: AdaptiveQueues.Queue) throws -> (schema: TypeSchema, key: [UInt8], clock: UInt64)? {
            var best: (schema: TypeSchema, key: [UInt8], clock: UInt64)?
            for schema in scope {
                let mine = skipping ? excluded[schema.number] ?? [] : []
                guard
                    let found = try queues.oldest(
                        type: schema.number, queue, records: schema.records, skipping: mine,
                        marks: skipping ? marks : nil)
                else { continue }
                if let current = best, current.clock <= found.clock { continue }
                best = (schema, found.key, found.clock)
            }
            return best
        }
        // The window's candidate meets probation's victim also among a commit's own records, once nothing else is
        // left (a batch that rewrites the records in use with as many new ones): without the duel, probation's
        // reused records went before the window's new ones (trial103 D1).
        if try windowExcess(scope, total: total) > 0, let candidate = try oldest(.window) {
            guard let victim = try oldest(.probation) ?? oldest(.protected) else {
                return (candidate.schema, candidate.key)
            }
            let candidateUses = try sketch.frequency(type: candidate.schema.number, key: candidate.key)
            let victimUses = try sketch.frequency(type: victim.schema.number, key: victim.key)
            if candidateUses > victimUses {
                try queues.place(type: candidate.schema.number, key: candidate.key, in: .probation)
                try ghosts.add(
                    type: victim.schema.number, key: victim.key, to: .main, held: held, lastUse: victim.clock)
                return (victim.schema, victim.key)
            }
            try ghosts.add(
                type: candidate.schema.number, key: candidate.key, to: .window, held: held, lastUse: candidate.clock)
            return (candidate.schema, candidate.key)
        }
        for queue in [AdaptiveQueues.Queue.probation, .protected, .window] {
            if let found = try oldest(queue) {
                try ghosts.add(
                    type: found.schema.number, key: found.key, to: queue == .window ? .window : .main, held: held,
                    lastUse: found.clock)
                return (found.schema, found.key)
            }
        }
        return nil
    }

    /// Moves the window's overflow to probation once the scope fits its limits.
    func settle(_ scope: [TypeSchema], total: Int) throws {
        var excess = try windowExcess(scope, total: total)
        while excess > 0 {
            var best: (type: UInt32, key: [UInt8], clock: UInt64)?
            for schema in scope {
                guard
                    let found = try queues.oldest(
                        type: schema.number, .window, records: schema.records, skipping: [])
                else { continue }
                if let current = best, current.clock <= found.clock { continue }
                best = (schema.number, found.key, found.clock)
            }
            guard let best else { return }
            try queues.place(type: best.type, key: best.key, in: .probation)
            excess -= 1
        }
    }

    func flush() throws {
        try sketch.flush()
        integers.set(AdaptiveEviction.windowKey, to: UInt64(windowQuarters))
        try integers.flush()
    }

    /// The policy's integers as ``flush()`` left them, for the writer's next transaction.
    func carry() -> MetaIntegers.Carried { integers.carry() }

    /// How many records the scope's window holds beyond its share.
    private func windowExcess(_ scope: [TypeSchema], total: Int) throws -> Int {
        var window = 0
        for schema in scope { window = window.adding(saturating: try queues.count(type: schema.number, .window)) }
        // total × quarters ÷ (4 × capacity), without overflow: the quotient is at most `total`.
        let product = max(0, total).multipliedFullWidth(by: windowQuarters)
        let share = (4 * windowCapacity).dividingFullWidth((product.high, product.low)).quotient
        return window - max(1, share)
    }

    /// Moves protected's oldest records of a type to probation while protected holds more than its share.
    private func demoteProtectedOverflow(type: UInt32) throws {
        guard let database = try records(type) else { return }
        let main = try queues.txn.entryCount(database) - queues.count(type: type, .window)
        // Of the limit, not of what the store holds now: a store that is still filling protects its reused records.
        let percent = AdaptiveEviction.protectedPercent(windowQuarters: windowQuarters, capacity: windowCapacity)
        let share = max(1, max(main, capacity) * percent / 100)
        while try queues.count(type: type, .protected) > share {
            guard
                let oldest = try queues.oldest(type: type, .protected, records: database, skipping: [])
            else { return }
            try queues.place(type: type, key: oldest.key, in: .probation)
        }
    }
}
