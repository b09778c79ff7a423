/// Index entries (key, id) collected in one contiguous arena and sorted without reference counting,
/// so a bulk save can add each database's entries in key order.
struct EntryBatch {
    private var arena: [UInt8] = []
    /// Each entry's first 16 key bytes as two big-endian numbers (zeros past the key's end): two entries whose
    /// numbers differ sort by them as memcmp would, and two keys of at most 16 bytes with equal numbers differ
    /// by their length alone (a number's key is 11 bytes; most strings' are short), without reading the arena.
    private var entries: [(prefix: UInt64, next: UInt64, offset: Int, keyCount: Int, idCount: Int)] = []

    init(capacity: Int) {
        entries.reserveCapacity(capacity)
        arena.reserveCapacity(capacity * 24)
    }

    mutating func append(key: [UInt8], id: [UInt8]) {
        var prefix: UInt64 = 0
        var next: UInt64 = 0
        for position in 0..<8 { prefix = prefix << 8 | UInt64(position < key.count ? key[position] : 0) }
        for position in 8..<16 { next = next << 8 | UInt64(position < key.count ? key[position] : 0) }
        entries.append((prefix, next, arena.count, key.count, id.count))
        arena.append(contentsOf: key)
        arena.append(contentsOf: id)
    }

    /// Sorts by key, then id (memcmp order: the order LMDB keeps them in). `idsAscending`: the entries were
    /// appended in id order, each id once, so entries with one key keep the order they came in.
    mutating func sort(idsAscending: Bool) {
        arena.withUnsafeBytes { raw in
            entries.sort { a, b in
                if a.prefix != b.prefix { return a.prefix < b.prefix }
                if a.next != b.next { return a.next < b.next }
                let endA = a.offset + a.keyCount
                let endB = b.offset + b.keyCount
                let order =
                    a.keyCount <= 16 && b.keyCount <= 16
                    ? (a.keyCount == b.keyCount ? 0 : (a.keyCount < b.keyCount ? -1 : 1))
                    : ByteOrder.compare(
                        UnsafeRawBufferPointer(rebasing: raw[a.offset..<endA]),
                        UnsafeRawBufferPointer(rebasing: raw[b.offset..<endB]))
                if order != 0 { return order < 0 }
                if idsAscending { return a.offset < b.offset }
                return ByteOrder.compare(
                    UnsafeRawBufferPointer(rebasing: raw[endA..<(endA + a.idCount)]),
                    UnsafeRawBufferPointer(rebasing: raw[endB..<(endB + b.idCount)])) < 0
            }
        }
    }

    /// Calls `body` with each (key, id) in the current order.
    func forEach(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) rethrows {
        try arena.withUnsafeBytes { raw in
            for entry in entries {
                let keyEnd = entry.offset + entry.keyCount
                try body(
                    UnsafeRawBufferPointer(rebasing: raw[entry.offset..<keyEnd]),
                    UnsafeRawBufferPointer(rebasing: raw[keyEnd..<(keyEnd + entry.idCount)]))
            }
        }
    }
}
