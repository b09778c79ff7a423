extension CountTree {
    /// Counts entries given in key order and writes each group's total once: a bulk save of 100,000
    /// records touches each counter once instead of once per record.
    struct Tally {
        let index: TypeSchema.Index
        let counts: Database
        /// Where each group's total goes: added to its counter, or (for `verify`) collected.
        private let sink: ([UInt8], Int, Transaction) throws -> Void
        private let levels: [Int]
        private var previous: [UInt8] = []
        /// What is pending for each level (by position in `levels`).
        private var pending: [Int]
        private var hasPrevious = false

        init(
            index: TypeSchema.Index, counts: Database,
            sink: (([UInt8], Int, Transaction) throws -> Void)? = nil
        ) {
            self.index = index
            self.counts = counts
            self.sink =
                sink ?? { key, count, txn in try CountTree.add(count, toCounter: key, counts: counts, txn: txn) }
            levels = CountTree.levels(of: index.kind)
            pending = Array(repeating: 0, count: levels.count)
        }

        /// Notes every entry of `index` in key order, then writes the last group's total.
        mutating func noteEveryEntry(of index: TypeSchema.Index, txn: Transaction) throws {
            try txn.withCursor(index.dbi) { cursor in
                var entry = try cursor.move(.first)
                while let current = entry {
                    try note(current.key, count: try cursor.duplicateCount(), txn: txn)
                    entry = try cursor.move(.nextKey)
                }
            }
            try finish(txn: txn)
        }

        /// Notes `count` entries under `key`, which must not sort before the previous key noted.
        mutating func note(_ key: UnsafeRawBufferPointer, count: Int, txn: Transaction) throws {
            if hasPrevious {
                // The first level whose group differs from the previous key's; deeper ones differ too.
                // (Compared in place: `zip(…).prefix(while:)` built an array of byte pairs for every entry, a
                // fifth of a bulk save's writer time.)
                let common = previous.withUnsafeBytes { previous in
                    let limit = min(previous.count, key.count)
                    var common = 0
                    while common < limit, previous[common] == key[common] { common += 1 }
                    return common
                }
                var position = 0
                while position < levels.count {
                    let length = min(levels[position], previous.count)
                    if length != min(levels[position], key.count) || common < length { break }
                    position += 1
                }
                if position < levels.count { try flush(from: position, txn: txn) }
            }
            previous.removeAll(keepingCapacity: true)
            previous.append(contentsOf: key)
            hasPrevious = true
            for position in pending.indices { pending[position] += count }
        }

        /// Writes what is pending.
        mutating func finish(txn: Transaction) throws {
            if hasPrevious { try flush(from: 0, txn: txn) }
            hasPrevious = false
        }

        private mutating func flush(from first: Int, txn: Transaction) throws {
            var counterKey = index.counterPrefix
            for position in first..<levels.count where pending[position] != 0 {
                let level = levels[position]
                counterKey.removeSubrange(8...)
                counterKey.append(UInt8(level))
                counterKey.append(contentsOf: previous[0..<min(level, previous.count)])
                try sink(counterKey, pending[position], txn)
                pending[position] = 0
            }
        }
    }
}
