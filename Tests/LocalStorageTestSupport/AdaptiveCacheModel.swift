/// A small in-memory reference of ``StorageEvictionPolicy/adaptive`` (W-TinyLFU as the store runs it),
/// written apart from the store's code: the tests replay random traces through both and compare them step
/// by step. Keys are record ids of one type (type number `type`); the cache holds at most `capacity`.
///
/// A commit folds the reads noted since the last one (of records still held), then the writes, then
/// evicts until the cache fits (never one of the commit's own records while another is left), then moves
/// the window's overflow to probation. The window's size moves by a quarter of a record each time a new
/// record was lately evicted: up when it was a window candidate the sketch turned away and it comes back
/// within 1.25 × `sketchCapacity` ticks of the queues' clock of its last placing, down when it was a record of
/// probation or protected (two ghost lists, each of the latest quarter-capacity such records).
public final class AdaptiveCacheModel {
    public enum Queue: Int, CaseIterable, Sendable { case window, probation, protected }

    public let capacity: Int
    public let type: UInt32
    private var position: [String: (queue: Queue, clock: UInt64)] = [:]
    private var byClock: [[UInt64: String]] = [[:], [:], [:]]
    private var heads: [UInt64] = [0, 0, 0]
    private var clock: UInt64 = 0
    private var pendingReads: [String] = []
    private var sketch: [UInt64: UInt64] = [:]
    private let blocks: UInt64
    private var samples: UInt64 = 0
    /// The window's size for a full cache, in quarters of a record (1% to 99% of `sketchCapacity`).
    public private(set) var windowQuarters: Int
    private let smallestWindow: Int
    private let largestWindow: Int
    /// Records lately evicted from the window (turned away by the sketch) and from probation or protected.
    private var windowGhosts = GhostList()
    private var mainGhosts = GhostList()
    private let ghostLimit: Int
    private let sketchCapacity: Int
    private let halvingPeriod: UInt64

    /// - Parameters:
    ///   - sketchCapacity: the records the sketch is sized for (the store's largest `maxRecords`).
    ///   - sketch: the sketch's blocks and halving period, when not the shape a new store gives
    ///     `sketchCapacity` (four blocks a record, rounded up to a power of two, at least 64 and at most
    ///     2²²; halved every 10 × `sketchCapacity` uses).
    public init(
        capacity: Int, sketchCapacity: Int? = nil, type: UInt32 = 1,
        sketch: (blocks: UInt64, halvingPeriod: UInt64)? = nil
    ) {
        self.capacity = capacity
        self.type = type
        let records = UInt64(max(1, sketchCapacity ?? capacity))
        var size: UInt64 = 64
        while size < min(records * 4, 1 << 22) { size <<= 1 }
        blocks = sketch?.blocks ?? size
        halvingPeriod = sketch?.halvingPeriod ?? records * 10
        self.sketchCapacity = sketchCapacity ?? capacity
        smallestWindow = max(1, self.sketchCapacity * 4 / 100)
        largestWindow = max(smallestWindow, self.sketchCapacity * 4 * 99 / 100)
        windowQuarters = smallestWindow
        ghostLimit = max(1, self.sketchCapacity / 4)
    }

    public var residents: Set<String> { Set(position.keys) }
    public func contains(_ key: String) -> Bool { position[key] != nil }
    public func queue(of key: String) -> Queue? { position[key]?.queue }

    /// Notes a read of a held record, folded at the next commit.
    public func read(_ key: String) {
        if position[key] != nil { pendingReads.append(key) }
    }

    /// One commit writing `keys` (new or existing); returns the evicted keys.
    @discardableResult
    public func commit(writing keys: [String]) -> [String] {
        var new: Set<String> = []
        for key in keys where position[key] == nil {
            position[key] = (.window, 0)  // present, not yet placed
            new.insert(key)
        }
        let reads = pendingReads
        pendingReads = []
        for key in reads where position[key] != nil { use(key) }
        for key in keys {
            if new.contains(key) { adjustWindow(returning: key) }
            use(key)
        }
        let excluded = Set(keys)
        var evicted: [String] = []
        while position.count > capacity {
            guard let victim = victim(excluded: excluded) else { break }
            remove(victim)
            evicted.append(victim)
        }
        while windowExcess > 0, let oldest = oldest(.window, skipping: []) { place(oldest, .probation) }
        return evicted
    }

    // MARK: - The policy

    private func use(_ key: String) {
        increment(key)
        switch position[key] {
        case .some((.probation, _)):
            place(key, .protected)
            let main = position.count - count(.window)
            // 90% less 4 points per whole percent of window (86% at a 1% window), at least 60%.
            let windowPercent = windowQuarters * 100 / (4 * sketchCapacity)
            let share = max(1, max(main, sketchCapacity) * max(60, 90 - 4 * windowPercent) / 100)
            while count(.protected) > share, let oldest = oldest(.protected, skipping: []) {
                place(oldest, .probation)
            }
        case .some((.protected, _)): place(key, .protected)
        default: place(key, .window)
        }
    }

    private func victim(excluded: Set<String>) -> String? {
        if windowExcess > 0, let candidate = oldest(.window, skipping: excluded) {
            guard let victim = oldest(.probation, skipping: excluded) ?? oldest(.protected, skipping: excluded)
            else { return candidate }
            if frequency(candidate) > frequency(victim) {
                place(candidate, .probation)
                mainGhosts.add(victim, limit: ghostLimit)
                return victim
            }
            windowGhosts.add(candidate, limit: ghostLimit, lastUse: position[candidate]?.clock ?? 0)
            return candidate
        }
        for skipping in [excluded, []] {
            for queue in [Queue.probation, .protected, .window] {
                if let found = oldest(queue, skipping: skipping) {
                    if queue == .window {
                        windowGhosts.add(found, limit: ghostLimit, lastUse: position[found]?.clock ?? 0)
                    } else {
                        mainGhosts.add(found, limit: ghostLimit)
                    }
                    return found
                }
            }
        }
        return nil
    }

    private var windowExcess: Int {
        count(.window) - max(1, position.count * windowQuarters / (4 * sketchCapacity))
    }

    /// A new record that was lately evicted moves the window: a quarter of a record larger when the sketch
    /// had turned it away from the window (unless it comes back too late for any window to have kept it),
    /// smaller when it had been evicted from probation or protected.
    private func adjustWindow(returning key: String) {
        if let lastUse = windowGhosts.lastUse[key] {
            _ = windowGhosts.remove(key)
            if clock - lastUse <= UInt64(sketchCapacity + sketchCapacity / 4) {
                windowQuarters = min(largestWindow, windowQuarters + 1)
            }
        } else if mainGhosts.remove(key) {
            windowQuarters = max(smallestWindow, windowQuarters - 1)
        }
    }

    // MARK: - Queues

    private func count(_ queue: Queue) -> Int { byClock[queue.rawValue].count }

    private func place(_ key: String, _ queue: Queue) {
        if let old = position[key], old.clock != 0 { byClock[old.queue.rawValue][old.clock] = nil }
        clock += 1
        position[key] = (queue, clock)
        byClock[queue.rawValue][clock] = key
    }

    private func remove(_ key: String) {
        if let old = position[key] { byClock[old.queue.rawValue][old.clock] = nil }
        position[key] = nil
    }

    private func oldest(_ queue: Queue, skipping: Set<String>) -> String? {
        let entries = byClock[queue.rawValue]
        guard !entries.isEmpty else { return nil }
        while heads[queue.rawValue] <= clock, entries[heads[queue.rawValue]] == nil { heads[queue.rawValue] += 1 }
        var at = heads[queue.rawValue]
        while at <= clock {
            if let key = entries[at], !skipping.contains(key) { return key }
            at += 1
        }
        return nil
    }

    // MARK: - The sketch (count-min, 4-bit counters, halved every `halvingPeriod` uses)

    private func hash(_ key: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for shift in [24, 16, 8, 0] { hash = (hash ^ UInt64((type >> UInt32(shift)) & 0xff)) &* 0x100_0000_01b3 }
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        return hash ^ (hash >> 31)
    }

    private func offsets(_ hash: UInt64) -> [UInt64] {
        (0..<4).map { depth in UInt64(depth * 16) + ((hash >> UInt64(32 + 2 * depth)) & 3) * 4 }
    }

    public func frequency(_ key: String) -> Int {
        let hash = hash(key)
        let block = sketch[hash & (blocks - 1)] ?? 0
        return offsets(hash).map { Int((block >> $0) & 15) }.min() ?? 0
    }

    private func increment(_ key: String) {
        let hash = hash(key)
        let index = hash & (blocks - 1)
        var block = sketch[index] ?? 0
        var changed = false
        for offset in offsets(hash) where (block >> offset) & 15 < 15 {
            block += 1 << offset
            changed = true
        }
        guard changed else { return }
        sketch[index] = block
        samples += 1
        if samples >= halvingPeriod {
            sketch = sketch.mapValues { ($0 >> 1) & 0x7777_7777_7777_7777 }.filter { $0.value != 0 }
            samples /= 2
        }
    }
}

/// The latest evicted keys of one kind, oldest first, at most `limit`: adding a key it holds moves it to the end.
struct GhostList {
    /// The queues' clock at each key's last placing before it was evicted.
    private(set) var lastUse: [String: UInt64] = [:]
    private var order: [UInt64: String] = [:]
    private var at: [String: UInt64] = [:]
    private var clock: UInt64 = 0
    private var head: UInt64 = 1

    mutating func add(_ key: String, limit: Int, lastUse use: UInt64 = 0) {
        _ = remove(key)
        lastUse[key] = use
        clock += 1
        order[clock] = key
        at[key] = clock
        while at.count > limit {
            while order[head] == nil { head += 1 }
            if let oldest = order.removeValue(forKey: head) {
                at[oldest] = nil
                lastUse[oldest] = nil
            }
        }
    }

    /// Takes `key` out; returns whether it was there.
    mutating func remove(_ key: String) -> Bool {
        guard let clock = at.removeValue(forKey: key) else { return false }
        lastUse[key] = nil
        order[clock] = nil
        return true
    }
}
