/// The walk the two clock-ordered eviction indexes share (``AccessIndex`` for least-recently-used, ``AdaptiveQueues``
/// for the adaptive policy's queues): keys are a prefix followed by a logical clock (8 bytes, big-endian), values
/// are record keys.
enum ClockOrderedWalk {
    /// The entry under `prefix` with the lowest clock whose record still exists in `records` and is not in
    /// `skipping`, and the record keys met on the way whose records are gone (deleted behind the index's back, by
    /// a process that does not track them), for the caller to drop.
    static func oldest(
        under prefix: [UInt8], in byClock: Database, records: Database, skipping: Set<[UInt8]>,
        txn: Transaction
    ) throws -> (found: (key: [UInt8], clock: UInt64)?, stale: [[UInt8]]) {
        var stale: [[UInt8]] = []
        let keyLength = prefix.count + 8
        let found: (key: [UInt8], clock: UInt64)? = try txn.withCursor(byClock) { cursor in
            var entry = try cursor.seek(atLeast: prefix)
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
                entry = try cursor.move(.next)
            }
            return nil
        }
        return (found, stale)
    }
}
