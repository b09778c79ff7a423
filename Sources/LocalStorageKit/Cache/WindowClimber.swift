/// The window's share for ``StorageEvictionPolicy/adaptive``, tuned by hill climbing (as Caffeine does):
/// the hits (reads of held records) and misses (new records) of each sample of requests give a hit rate;
/// when it fell since the last sample the step changes direction, and the window moves by the step. The step
/// (2.5% of the records at first) shrinks by 2% a sample and starts again when the hit rate jumps by 5 points, so a workload that shifts
/// towards recency grows the window (LRU-like) and one that rewards frequency shrinks it.
///
/// Kept in `meta` (`adaptive.window`), so every process tunes one window.
struct WindowClimber: Equatable {
    static let key: [UInt8] = Array("adaptive.window".utf8)
    /// Bounds of the window's share, per mille of the records in a scope.
    static let smallest = 10
    static let largest = 800
    /// The first step, and the step again after a jump, per mille.
    static let initialStep = 25

    /// The window's share, per mille.
    var window = WindowClimber.smallest
    var step = WindowClimber.initialStep
    var hits = 0
    var misses = 0
    /// The last sample's hit rate in parts per million, or -1 before the first.
    var previous = -1

    /// Requests per sample for a store whose largest limit is `capacity` records.
    static func sampleSize(capacity: Int) -> Int { max(500, 4 * capacity) }

    /// Counts one request; at the end of a sample moves the window.
    mutating func record(hit: Bool, sampleSize: Int) {
        if hit { hits += 1 } else { misses += 1 }
        guard hits + misses >= sampleSize else { return }
        let rate = hits * 1_000_000 / (hits + misses)
        if previous >= 0 {
            let delta = rate - previous
            if delta < 0 { step = -step }
            let jumped = abs(delta) >= 50_000
            window = min(WindowClimber.largest, max(WindowClimber.smallest, window + step))
            step = jumped ? (step < 0 ? -WindowClimber.initialStep : WindowClimber.initialStep) : step * 98 / 100
        } else {
            window = min(WindowClimber.largest, max(WindowClimber.smallest, window + step))
        }
        previous = rate
        hits = 0
        misses = 0
    }

    static func load(_ meta: Database, _ txn: Transaction) throws -> WindowClimber {
        guard let stored = try txn.get(meta, key: key), stored.count == 40 else { return WindowClimber() }
        func field(_ index: Int) -> Int {
            Int(Int64(bitPattern: UInt64(bigEndian: stored.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))))
        }
        var climber = WindowClimber()
        climber.window = min(largest, max(smallest, field(0)))
        climber.step = field(1)
        climber.hits = max(0, field(2))
        climber.misses = max(0, field(3))
        climber.previous = field(4)
        return climber
    }

    func save(_ meta: Database, _ txn: Transaction) throws {
        var bytes: [UInt8] = []
        for value in [window, step, hits, misses, previous] { bytes.appendBigEndian(UInt64(bitPattern: Int64(value))) }
        try txn.put(meta, key: WindowClimber.key, value: bytes)
    }
}
