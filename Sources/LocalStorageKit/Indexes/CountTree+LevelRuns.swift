import CLMDB

extension CountTree {
    /// The counter changes a ``Tally`` finds for one index's new entries (a bulk save), kept level by level
    /// and written once every index of the batch is tallied, by ``write(_:counts:txn:)``.
    ///
    /// A tally flushes each group once and in key order within its level, so the runs of every index, taken
    /// by slot and then level, are in the counts database's key order. When the first of them sorts after the
    /// database's last counter (the first bulk load of a type), every counter is new and goes in at the end
    /// with `MDB_APPEND`: no search and no read per counter. Otherwise each is added to its counter.
    final class LevelRuns {
        let index: TypeSchema.Index
        /// The counter keys, one after another.
        private var bytes: [UInt8] = []
        /// For each level (by its number, the counter key's ninth byte): where each counter key is in `bytes`,
        /// and what to add to it.
        private var levels: [[(start: Int, count: Int, delta: Int)]] = Array(repeating: [], count: 256)

        init(index: TypeSchema.Index) {
            self.index = index
        }

        /// A tally for `index` whose totals go into these runs.
        func tally(counts: Database) -> Tally {
            Tally(index: index, counts: counts) { [self] key, delta, _ in note(key, delta: delta) }
        }

        private func note(_ key: [UInt8], delta: Int) {
            guard key.count > 8 else { return }
            levels[Int(key[8])].append((bytes.count, key.count, delta))
            bytes.append(contentsOf: key)
        }

        /// Calls `body` with each counter key and its change, level by level, each level in key order.
        fileprivate func forEach(_ body: (UnsafeRawBufferPointer, Int) throws -> Void) rethrows {
            try bytes.withUnsafeBytes { all in
                for level in levels {
                    for entry in level {
                        try body(
                            UnsafeRawBufferPointer(rebasing: all[entry.start..<(entry.start + entry.count)]),
                            entry.delta)
                    }
                }
            }
        }
    }

    /// Writes the counter changes of `runs` (one per index of a batch, any order), each counter once.
    static func write(_ runs: [LevelRuns], counts: Database, txn: Transaction) throws {
        var appending: Bool?
        try txn.withCursor(counts) { cursor in
            for run in runs.sorted(by: { $0.index.slot < $1.index.slot }) {
                try run.forEach { key, delta in
                    if appending == nil {
                        appending = try SortedAppend.sortsAfterLast(Array(key), in: counts, txn: txn)
                    }
                    guard appending == true, delta > 0 else {
                        try add(delta, toCounter: key, cursor: &cursor)
                        return
                    }
                    var encoded = UInt64(delta).littleEndian
                    try withUnsafeBytes(of: &encoded) { value in
                        try txn.put(counts, key: key, value: value, flags: UInt32(MDB_APPEND))
                    }
                }
            }
        }
    }
}
