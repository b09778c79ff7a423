import CLMDB
import Synchronization

/// Exact entry counts of every index by key prefix, so that a range count costs the same for 100 or
/// 100,000 matches (docs/DESIGN.md, "Counts").
///
/// LMDB's B-tree keeps no counts, so the store keeps its own in the `counts` database. Each kind of index
/// has a few levels, each a prefix length `L` (``levels(of:)``); for an index slot and a level, the counter
/// under `type# ‖ slot# ‖ L ‖ p` holds how many entries of the index have a key whose first
/// `min(L, key length)` bytes are `p`. The groups of one level partition the entries, and their names sort
/// the way their members do, so the number of entries below a key `K` is the sum, level by level, of the
/// groups inside `K`'s parent group that sort before `K`'s own group, plus a walk of the entries of `K`'s
/// deepest group. Each level costs one seek and a walk from the nearer end of the parent's groups.
///
/// Counters change in the same transaction as the entries they count, so they are exact in every
/// snapshot; a nested transaction that aborts takes its counter changes with it.
enum CountTree {
    static let databaseName = "counts"

    /// The prefix lengths an index of `kind` keeps counters for. A number's key is a tag, two exponent bytes
    /// and the mantissa (``OrderedKey``): the first level groups by sign and binary exponent (a few dozen
    /// groups in practice, at most 4,200), the next two by the mantissa's first two bytes, so a group of a
    /// 100,000-record store holds about one entry. Strings keep one level per byte of their first eight.
    @inline(__always)
    static func levels(of kind: IndexKind) -> [Int] { kind == .number ? numberLevels : stringLevels }
    private static let numberLevels = [3, 4, 5]
    private static let stringLevels = [1, 2, 3, 4, 5, 6, 7, 8]

    /// The bytes every counter of `slot` of type `type` starts with.
    static func counterPrefix(type: UInt32, slot: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(9)
        bytes.appendBigEndian(type)
        bytes.appendBigEndian(slot)
        return bytes
    }

    // MARK: - Keeping the counts

    /// Adds `delta` to the counters of every level for one entry key.
    static func adjust(
        _ key: UnsafeRawBufferPointer, by delta: Int, index: TypeSchema.Index, counts: Database,
        txn: Transaction
    ) throws {
        var counterKey = index.counterPrefix
        counterKey.reserveCapacity(17)
        try txn.withCursor(counts) { cursor in
            for level in levels(of: index.kind) {
                counterKey.removeSubrange(8...)
                counterKey.append(UInt8(level))
                counterKey.append(contentsOf: UnsafeRawBufferPointer(rebasing: key[0..<min(level, key.count)]))
                try counterKey.withUnsafeBytes { try add(delta, toCounter: $0, cursor: &cursor) }
            }
        }
    }

    /// A stored counter's value: 0 for one that is not eight bytes, and a damaged one past any real count
    /// capped at 2⁴⁸, so that adding a delta to it cannot overflow (sums of many saturate: review-89 R2).
    static func counterValue(_ stored: UnsafeRawBufferPointer) -> Int {
        guard stored.count == 8 else { return 0 }
        return Int(min(UInt64(littleEndian: stored.loadUnaligned(as: UInt64.self)), 1 << 48))
    }

    /// Adds `delta` to one counter, deleting it when it reaches zero.
    static func add(_ delta: Int, toCounter counterKey: [UInt8], counts: Database, txn: Transaction) throws {
        try txn.withCursor(counts) { cursor in
            try counterKey.withUnsafeBytes { try add(delta, toCounter: $0, cursor: &cursor) }
        }
    }

    /// Adds `delta` to one counter through a cursor on the count tree's database: the counter is found once
    /// and changed where it is (a get and a put would search for it twice).
    static func add(_ delta: Int, toCounter key: UnsafeRawBufferPointer, cursor: inout Cursor) throws {
        // No change writes nothing (a put of the same value would still dirty the counter's page).
        guard delta != 0 else { return }
        let stored: UnsafeRawBufferPointer?
        if delta > 0 {
            // A new counter (most at the deepest level of a number index) goes in with the search that finds none.
            var encoded = UInt64(delta).littleEndian
            guard let existing = try withUnsafeBytes(of: &encoded, { try cursor.insert(key, $0) }) else { return }
            stored = existing
        } else {
            stored = try cursor.find(key)
        }
        let value = max(0, (stored.map(counterValue) ?? 0) + delta)
        var encoded = UInt64(value).littleEndian
        if value == 0 {
            if stored != nil { try cursor.deleteCurrent() }
        } else if stored?.count == 8 {
            try withUnsafeBytes(of: &encoded) { try cursor.put(key, $0, flags: UInt32(MDB_CURRENT)) }
        } else {
            try withUnsafeBytes(of: &encoded) { try cursor.put(key, $0) }
        }
    }

    /// Removes every counter of an index (its entries are being removed wholesale).
    static func clear(_ index: TypeSchema.Index, counts: Database, txn: Transaction) throws {
        try txn.withCursor(counts) { cursor in
            while let current = try cursor.seek(atLeast: index.counterPrefix),
                current.key.starts(with: index.counterPrefix)
            {
                try cursor.deleteCurrent()
            }
        }
    }

    /// Rebuilds the counters of an index from its entries: O(entries), once per index when an older store
    /// is opened.
    static func rebuild(_ index: TypeSchema.Index, counts: Database, txn: Transaction) throws {
        try clear(index, counts: counts, txn: txn)
        var tally = Tally(index: index, counts: counts)
        try tally.noteEveryEntry(of: index, txn: txn)
    }

    /// The counters an index's entries call for, by counter key, computed from the entries (for `verify`).
    static func expectedCounters(
        _ index: TypeSchema.Index, counts: Database,
        txn: Transaction
    ) throws -> [[UInt8]: Int] {
        let collected = Mutex<[[UInt8]: Int]>([:])
        var tally = Tally(index: index, counts: counts) { key, count, _ in
            collected.withLock { $0[key, default: 0] += count }
        }
        try tally.noteEveryEntry(of: index, txn: txn)
        return collected.withLock { $0 }
    }

    /// The counters an index has, by counter key.
    static func storedCounters(
        _ index: TypeSchema.Index, counts: Database,
        txn: Transaction
    ) throws -> [[UInt8]: Int] {
        var stored: [[UInt8]: Int] = [:]
        try txn.withCursor(counts) { cursor in
            var entry = try cursor.seek(atLeast: index.counterPrefix)
            while let current = entry, current.key.starts(with: index.counterPrefix) {
                stored[Array(current.key)] =
                    current.value.count == 8 ? counterValue(current.value) : -1
                entry = try cursor.move(.next)
            }
        }
        return stored
    }

    // MARK: - Counting

    /// The number of entries of `index` whose key sorts before `key`.
    ///
    /// Level by level, it sums the groups inside `key`'s parent group that sort before `key`'s own group,
    /// walking from the end of the parent's groups that is likely nearer (the other side is the parent's
    /// count minus the walked side and `key`'s group): one seek and a short walk per level. Then it walks
    /// the entries of `key`'s deepest group that sort before it.
    static func rank(below key: [UInt8], index: TypeSchema.Index, counts: Database, txn: Transaction) throws -> Int {
        try rank(
            below: key, fromLevel: 0, parentCount: try txn.entryCount(index.dbi), parentLength: 0, index: index,
            counts: counts, txn: txn)
    }

    /// The number of entries of the group of `key`'s first `parentLength` bytes (`parentCount` of them) whose key
    /// sorts before `key`, from the level at `fromLevel` in ``levels(of:)`` down (``rank(below:index:counts:txn:)``
    /// from the top).
    static func rank(
        below key: [UInt8], fromLevel first: Int, parentCount: Int, parentLength: Int, index: TypeSchema.Index,
        counts: Database, txn: Transaction
    ) throws -> Int {
        let levels = levels(of: index.kind)
        var total = 0
        var parentCount = parentCount
        var parentLength = parentLength
        var start = index.counterPrefix
        start.reserveCapacity(17)
        var edgeKey = start
        let finished: Bool = try txn.withCursor(counts) { cursor in
            for level in levels[first...] {
                if parentCount == 0 { return true }
                start.removeSubrange(8...)
                start.append(UInt8(level))
                start.append(contentsOf: key[0..<parentLength])
                edgeKey.removeSubrange(8...)
                edgeKey.append(UInt8(level))
                edgeKey.append(contentsOf: key[0..<min(level, key.count)])
                let forward = startsNearer(key, at: parentLength, kind: index.kind)
                let (before, edgeCount) = try groupsBefore(
                    edgeKey, in: start, parentCount: parentCount,
                    forward: forward, cursor: &cursor)
                total += before
                // Every entry of `key`'s own group at this level is ≥ `key` when the key ends here.
                if key.count <= level { return true }
                parentCount = edgeCount
                parentLength = level
            }
            return parentCount == 0
        }
        if finished { return total }
        return total + (try entriesBetween(key[0..<parentLength], and: key, index: index, txn: txn))
    }

    /// The entries of `index` whose key is at least `lower` and sorts before `upper`, by a walk of their keys.
    static func entriesBetween<Lower: Collection<UInt8>>(
        _ lower: Lower, and upper: [UInt8], index: TypeSchema.Index, txn: Transaction
    ) throws -> Int {
        var total = 0
        try txn.withCursor(index.dbi) { cursor in
            try upper.withUnsafeBytes { target in
                var entry = try cursor.seek(atLeast: Array(lower))
                while let current = entry, ByteOrder.compare(current.key, target) < 0 {
                    total += try cursor.duplicateCount()
                    entry = try cursor.move(.nextKey)
                }
            }
        }
        return total
    }

    /// The cursor on the last child of the group `start` names: the entry before the first key past every key
    /// that starts with `start` (the caller checks that it is one of them).
    private static func lastEntry(under start: [UInt8], cursor: inout Cursor) throws -> Cursor.Entry? {
        if let past = OrderedKey.successor(of: start), try cursor.seek(atLeast: past) != nil {
            return try cursor.move(.previous)
        }
        return try cursor.move(.last)
    }

    /// Whether `key`'s group likely sits in the first half of its siblings, judged by the byte after the
    /// parent's prefix: a number's first mantissa byte has its top bit set when positive (clear when
    /// negative, the bytes being inverted), strings are mostly ASCII letters and digits.
    @inline(__always)
    private static func startsNearer(_ key: [UInt8], at position: Int, kind: IndexKind) -> Bool {
        guard position < key.count else { return true }
        let byte = key[position]
        switch kind {
        case .number:
            if position == 0 { return byte <= OrderedKey.zeroTag }
            if position == 3 { return key[0] == OrderedKey.positiveTag ? byte < 0xC0 : byte < 0x40 }
            return byte < 0x80
        case .string:
            return byte < 0x58
        }
    }

    /// The total of the counters under `start` (one parent group's children) that sort before `edge`, and
    /// the counter of `edge` itself (0 when absent): forward from the first child, or backward from the
    /// last one (the parent's count minus what lies after).
    ///
    /// `edge` is one of the children's names, so every key from `start` up to `edge`, and every key from
    /// `edge` up to the first past the children, is a child: the walks compare with `edge` alone.
    private static func groupsBefore(
        _ edge: [UInt8], in start: [UInt8], parentCount: Int, forward: Bool,
        cursor: inout Cursor
    ) throws -> (before: Int, edge: Int) {
        try edge.withUnsafeBytes { edge in
            if forward {
                var before = 0
                var entry = try cursor.seek(atLeast: start)
                while let current = entry {
                    let order = ByteOrder.compare(current.key, edge)
                    if order == 0 { return (before, counterValue(current.value)) }
                    if order > 0 { break }
                    before = before.adding(saturating: counterValue(current.value))
                    entry = try cursor.move(.next)
                }
                return (before, 0)
            }
            var entry = try lastEntry(under: start, cursor: &cursor)
            var after = 0
            while let current = entry {
                let order = ByteOrder.compare(current.key, edge)
                if order == 0 {
                    let own = counterValue(current.value)
                    return (max(0, parentCount - after - own), own)
                }
                if order < 0 { break }
                after += counterValue(current.value)
                entry = try cursor.move(.previous)
            }
            return (max(0, parentCount - after), 0)
        }
    }
}

extension CountTree {
    /// Where the entry at position `rank` (from 0, in key then id order) of `index` is: the `skip`-th entry
    /// at or after key `start`. Nil when the index has no more than `rank` entries. Costs what
    /// ``rank(below:index:counts:txn:)`` does.
    static func locate(
        rank: Int, index: TypeSchema.Index, counts: Database,
        txn: Transaction
    ) throws -> (start: [UInt8], skip: Int)? {
        var remaining = rank
        var parent: [UInt8] = []
        // The entries of the parent group; the whole index's for the first level (also walked forward: it
        // has a few dozen groups at most in practice).
        var parentCount: Int?
        var start = index.counterPrefix
        return try txn.withCursor(counts) { cursor in
            for level in levels(of: index.kind) {
                start.removeSubrange(8...)
                start.append(UInt8(level))
                start.append(contentsOf: parent)
                let backward = parentCount.map { remaining >= $0 / 2 } ?? false
                guard
                    let (child, before, own) = try backward
                        ? groupHolding(remaining, in: start, parentCount: parentCount ?? 0, cursor: &cursor)
                        : groupHolding(remaining, in: start, cursor: &cursor)
                else { return nil }
                parent = child
                remaining -= before
                parentCount = own
                // A group named by a whole key holds that key's entries only.
                if parent.count < level { return (parent, remaining) }
            }
            return (parent, remaining)
        }
    }

    /// The child group under `start` that holds the entry `rank` entries past the parent's first: its name
    /// (the key prefix), the entries of the children before it and its own count; walked forward from the first
    /// child.
    private static func groupHolding(
        _ rank: Int, in start: [UInt8], cursor: inout Cursor
    ) throws -> (name: [UInt8], before: Int, count: Int)? {
        var before = 0
        var entry = try cursor.seek(atLeast: start)
        while let current = entry, current.key.count >= start.count, current.key.starts(with: start) {
            let count = counterValue(current.value)
            if rank - before < count { return (Array(current.key[9...]), before, count) }
            before = before.adding(saturating: count)
            entry = try cursor.move(.next)
        }
        return nil
    }

    /// ``groupHolding(_:in:cursor:)`` walked backward from the last child, for a rank in the second half of a
    /// parent group of `parentCount` entries (the entries before a child are the parent's count minus the
    /// children from it to the last).
    private static func groupHolding(
        _ rank: Int, in start: [UInt8], parentCount: Int, cursor: inout Cursor
    ) throws -> (name: [UInt8], before: Int, count: Int)? {
        var entry = try lastEntry(under: start, cursor: &cursor)
        var fromHere = 0
        while let current = entry, current.key.count >= start.count, current.key.starts(with: start) {
            let count = counterValue(current.value)
            fromHere = fromHere.adding(saturating: count)
            let before = parentCount - fromHere
            if rank >= before {
                // Counters that disagree with the parent's (a damaged store) end the walk like a rank past the end.
                guard before >= 0, rank - before < count else { return nil }
                return (Array(current.key[9...]), before, count)
            }
            entry = try cursor.move(.previous)
        }
        return nil
    }
}
