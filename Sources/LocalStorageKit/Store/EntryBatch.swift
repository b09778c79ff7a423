/// Index entries (key, id) collected in one contiguous arena and sorted without reference counting,
/// so a bulk save can add each database's entries in key order.
struct EntryBatch {
    private var arena: [UInt8] = []
    /// Each entry's first 16 key bytes as two big-endian numbers (zeros past the key's end): two entries whose
    /// numbers differ sort by them as memcmp would, and two keys of at most 16 bytes with equal numbers differ
    /// by their length alone (a number's key is 11 bytes; most strings' are short), without reading the arena.
    private var entries: [Entry] = []

    private typealias Entry = (prefix: UInt64, next: UInt64, offset: Int, keyCount: Int32, idCount: Int32)

    init(capacity: Int) {
        entries.reserveCapacity(capacity)
        arena.reserveCapacity(capacity * 24)
    }

    mutating func append(key: [UInt8], id: [UInt8]) {
        let offset = arena.count
        arena.append(contentsOf: key)
        noteEntry(at: offset, id: id)
    }

    /// Appends the entry a record with the stored index value `stored` (nil: none) has in an index of `kind`: the
    /// key ``IndexValue/keyBytes(kind:stored:)`` makes, written straight into the arena.
    mutating func append(kind: IndexKind, stored: UnsafeRawBufferPointer?, id: [UInt8]) {
        let offset = arena.count
        switch (kind, stored) {
        case (_, nil): arena.append(contentsOf: IndexKeys.missing)
        case (.number, let stored?): arena.append(contentsOf: stored)
        case (.string, let stored?): OrderedKey.appendString(utf8: stored, to: &arena)
        }
        noteEntry(at: offset, id: id)
    }

    /// Notes the entry whose key the arena holds from `offset` on, and appends its id.
    private mutating func noteEntry(at offset: Int, id: [UInt8]) {
        let keyCount = arena.count - offset
        var prefix: UInt64 = 0
        var next: UInt64 = 0
        arena.withUnsafeBufferPointer { arena in
            for position in 0..<8 {
                prefix = prefix << 8 | UInt64(position < keyCount ? arena[offset + position] : 0)
            }
            for position in 8..<16 { next = next << 8 | UInt64(position < keyCount ? arena[offset + position] : 0) }
        }
        entries.append((prefix, next, offset, Int32(keyCount), Int32(id.count)))
        arena.append(contentsOf: id)
    }

    /// Sorts by key, then id (memcmp order: the order LMDB keeps them in). `idsAscending`: the entries were
    /// appended in id order, each id once, so entries with one key keep the order they came in.
    ///
    /// Complexity: for a batch appended in id order, a stable radix sort of the 16-byte prefixes and the key lengths,
    /// O(n), then a comparison sort of each run of longer keys that share their first 16 bytes (keys such as URLs or
    /// paths with a long common start all fall in one run, which then costs what the comparison sort of them alone
    /// does); O(n log n) comparisons otherwise. The comparison sort was a fifth of a 100,000-record bulk save's writer
    /// time.
    mutating func sort(idsAscending: Bool) {
        guard idsAscending, entries.count >= 64 else {
            sortComparing(idsAscending: idsAscending, in: entries.indices)
            return
        }
        sortByPrefix()
        // Keys longer than 16 bytes with equal prefixes are ordered by their full bytes.
        var start = 0
        while start < entries.count {
            var end = start + 1
            var hasLong = entries[start].keyCount > 16
            while end < entries.count, entries[end].prefix == entries[start].prefix,
                entries[end].next == entries[start].next
            {
                hasLong = hasLong || entries[end].keyCount > 16
                end += 1
            }
            if hasLong && end - start > 1 { sortComparing(idsAscending: true, in: start..<end) }
            start = end
        }
    }

    /// A stable least-significant-digit radix sort by (prefix, next, key length up to 17): the memcmp order of the
    /// keys when they are at most 16 bytes long, and the append order between equal ones. Every digit's counts come
    /// from one read of the entries; a digit that is the same in every entry moves nothing.
    private mutating func sortByPrefix() {
        let count = entries.count
        // Digit 0: the length (keys past 16 bytes as one group, ordered afterwards); 1–8: `next`'s bytes from the
        // last; 9–16: `prefix`'s. Least significant first.
        @inline(__always) func digit(_ entry: Entry, _ pass: Int) -> Int {
            if pass == 0 { return min(Int(entry.keyCount), 17) }
            let shift = UInt64(((pass - 1) & 7) * 8)
            return Int(truncatingIfNeeded: (pass <= 8 ? entry.next : entry.prefix) >> shift) & 0xFF
        }
        var counts = [Int](repeating: 0, count: 17 * 256)
        var scratch = entries
        var sourceIsEntries = true
        counts.withUnsafeMutableBufferPointer { counts in
            entries.withUnsafeMutableBufferPointer { entries in
                scratch.withUnsafeMutableBufferPointer { scratch in
                    for entry in entries {
                        for pass in 0..<17 { counts[pass * 256 + digit(entry, pass)] += 1 }
                    }
                    for pass in 0..<17 {
                        let base = pass * 256
                        if counts[base + digit(entries[0], pass)] == count { continue }
                        var total = 0
                        for bucket in base..<(base + 256) {
                            let size = counts[bucket]
                            counts[bucket] = total
                            total += size
                        }
                        let (from, to) = sourceIsEntries ? (entries, scratch) : (scratch, entries)
                        for position in 0..<count {
                            let bucket = base + digit(from[position], pass)
                            to[counts[bucket]] = from[position]
                            counts[bucket] += 1
                        }
                        sourceIsEntries.toggle()
                    }
                }
            }
        }
        if !sourceIsEntries { entries = scratch }
    }

    /// Sorts `range` of the entries by comparing keys (memcmp order), then ids, or append order with `idsAscending`.
    private mutating func sortComparing(idsAscending: Bool, in range: Range<Int>) {
        arena.withUnsafeBytes { raw in
            entries[range].sort { a, b in
                if a.prefix != b.prefix { return a.prefix < b.prefix }
                if a.next != b.next { return a.next < b.next }
                let endA = a.offset + Int(a.keyCount)
                let endB = b.offset + Int(b.keyCount)
                let order =
                    a.keyCount <= 16 && b.keyCount <= 16
                    ? (a.keyCount == b.keyCount ? 0 : (a.keyCount < b.keyCount ? -1 : 1))
                    : ByteOrder.compare(
                        UnsafeRawBufferPointer(rebasing: raw[a.offset..<endA]),
                        UnsafeRawBufferPointer(rebasing: raw[b.offset..<endB]))
                if order != 0 { return order < 0 }
                if idsAscending { return a.offset < b.offset }
                return ByteOrder.compare(
                    UnsafeRawBufferPointer(rebasing: raw[endA..<(endA + Int(a.idCount))]),
                    UnsafeRawBufferPointer(rebasing: raw[endB..<(endB + Int(b.idCount))])) < 0
            }
        }
    }

    /// Calls `body` with each (key, id) in the current order.
    func forEach(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) rethrows {
        try arena.withUnsafeBytes { raw in
            for entry in entries {
                let keyEnd = entry.offset + Int(entry.keyCount)
                try body(
                    UnsafeRawBufferPointer(rebasing: raw[entry.offset..<keyEnd]),
                    UnsafeRawBufferPointer(rebasing: raw[keyEnd..<(keyEnd + Int(entry.idCount))]))
            }
        }
    }
}
