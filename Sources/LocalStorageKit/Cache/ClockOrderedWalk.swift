/// The walk the two clock-ordered eviction indexes share (``AccessIndex`` for least-recently-used, ``AdaptiveQueues``
/// for the adaptive policy's queues): keys are a prefix followed by a logical clock (8 bytes, big-endian), values
/// are record keys.
enum ClockOrderedWalk {
    /// Where the walks of one eviction run may start: past the entries a walk met first and skipped (records the
    /// commit wrote) or found gone. No later walk of the run can take those either: a run only removes records,
    /// what it places in a queue gets a later clock, and it skips the same records throughout. Without them, each
    /// eviction walked past every record of the batch again (review-94 #1: 10,000 new records into a full store
    /// took minutes under the adaptive policy, whose window holds the batch).
    final class Marks {
        private var starts: [Database: [[UInt8]: [UInt8]]] = [:]
        /// How many entries the run's walks passed over without taking them (tests see the run stay linear).
        private(set) var passed = 0

        init() {}

        /// Counts `count` entries a walk passed over.
        func pass(_ count: Int = 1) { passed += count }

        /// The headers of each type without its update order (``UpdateOrder``) that the run sorted, oldest first, and
        /// the position of the first whose record may still be stored: sorted once a run (after the commit's own
        /// writes, which come before its evictions), and walked on from there as victims go.
        var sortedHeaders: [UInt32: (places: [(time: UInt64, id: [UInt8])], start: Int)] = [:]

        fileprivate func start(_ database: Database, _ prefix: [UInt8]) -> [UInt8] {
            starts[database]?[prefix] ?? prefix
        }

        fileprivate func set(_ database: Database, _ prefix: [UInt8], to key: [UInt8]) {
            starts[database, default: [:]][prefix] = key
        }
    }

    /// The entry under `prefix` with the lowest clock whose record still exists in `records` and is not in
    /// `skipping`, and the record keys met on the way whose records are gone (deleted behind the index's back, by
    /// a process that does not track them), for the caller to drop. With `marks`, the walk starts where the run's
    /// last walk of this prefix found its first entry to take (`skipping` must be the same in every such walk).
    static func oldest(
        under prefix: [UInt8], in byClock: Database, records: Database, skipping: Set<[UInt8]>,
        marks: Marks? = nil, txn: Transaction
    ) throws -> (found: (key: [UInt8], clock: UInt64)?, stale: [[UInt8]]) {
        var stale: [[UInt8]] = []
        let keyLength = prefix.count + 8
        let found: (key: [UInt8], clock: UInt64)? = try txn.withCursor(byClock) { cursor in
            var entry = try cursor.seek(atLeast: marks?.start(byClock, prefix) ?? prefix)
            var lastPassed: [UInt8]?
            defer {
                // Past the last entry passed over, whatever comes next (a key one byte longer sorts right after it).
                if let marks, let lastPassed { marks.set(byClock, prefix, to: lastPassed + [0]) }
            }
            while let current = entry, current.key.count == keyLength, current.key.starts(with: prefix) {
                let key = Array(current.value)
                if !skipping.contains(key) {
                    if try txn.get(records, key: key) != nil {
                        let clock = UInt64(
                            bigEndian: UnsafeRawBufferPointer(rebasing: current.key[prefix.count...])
                                .loadUnaligned(as: UInt64.self))
                        return (key, clock)
                    }
                    stale.append(key)
                }
                lastPassed = Array(current.key)
                marks?.pass()
                entry = try cursor.move(.next)
            }
            return nil
        }
        return (found, stale)
    }
}
