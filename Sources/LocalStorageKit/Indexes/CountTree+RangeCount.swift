/// Range counts from the level where the two bounds part (docs/DESIGN.md, "A memory-tier hit without an
/// asynchronous call, range counts from where the bounds part").
extension CountTree {
    /// The number of entries of `index` whose key is at least `lower` and sorts before `upper`: what
    /// `rank(below: upper) - rank(below: lower)` says, from the level where the two keys' groups part.
    ///
    /// Above that level both keys are in the same groups, and their two ranks would walk the same siblings to
    /// cancel them out; there, the groups strictly between the two are summed (a short walk for a narrow
    /// range), then the part of `lower`'s group from `lower` on and the part of `upper`'s group before `upper`
    /// are ranked inside those groups. A walk between the two groups longer than ``divergingWalkLimit`` (a wide
    /// range) gives way to the two ranks, which walk from the nearer ends.
    static func count(
        from lower: [UInt8], below upper: [UInt8], index: TypeSchema.Index, counts: Database, txn: Transaction
    ) throws -> Int {
        guard lower.lexicographicallyPrecedes(upper) else { return 0 }
        let levels = levels(of: index.kind)
        let twoRanks = {
            try rank(below: upper, index: index, counts: counts, txn: txn)
                - rank(below: lower, index: index, counts: counts, txn: txn)
        }
        // A key that ends within the levels is its own group's name there (the ranks handle it).
        guard let deepest = levels.last, lower.count > deepest, upper.count > deepest else { return try twoRanks() }
        guard let parting = levels.firstIndex(where: { lower[0..<$0] != upper[0..<$0] }) else {
            // The same deepest group: its entries in the range.
            return try entriesBetween(lower, and: upper, index: index, txn: txn)
        }
        let level = levels[parting]
        var prefix = index.counterPrefix
        prefix.append(UInt8(level))
        let lowerGroup = prefix + lower[0..<level]
        let upperGroup = prefix + upper[0..<level]
        let walked: (lower: Int, between: Int, upper: Int)? = try txn.withCursor(counts) { cursor in
            try lowerGroup.withUnsafeBytes { lowerName in
                try upperGroup.withUnsafeBytes { upperName in
                    var entry = try cursor.seek(atLeast: lowerGroup)
                    var lowerCount = 0
                    if let current = entry, ByteOrder.compare(current.key, lowerName) == 0 {
                        lowerCount = counterValue(current.value)
                        entry = try cursor.move(.next)
                    }
                    // Every counter between the two groups' names is a sibling of theirs (they share the parent).
                    var between = 0
                    var steps = 0
                    while let current = entry, ByteOrder.compare(current.key, upperName) < 0 {
                        steps += 1
                        if steps > divergingWalkLimit { return nil }
                        between += counterValue(current.value)
                        entry = try cursor.move(.next)
                    }
                    let upperCount = entry.map {
                        ByteOrder.compare($0.key, upperName) == 0 ? counterValue($0.value) : 0
                    }
                    return (lowerCount, between, upperCount ?? 0)
                }
            }
        }
        guard let walked else { return try twoRanks() }
        var total = walked.between
        if walked.lower > 0 {
            total += walked.lower
            total -= try rank(
                below: lower, fromLevel: parting + 1, parentCount: walked.lower, parentLength: level, index: index,
                counts: counts, txn: txn)
        }
        if walked.upper > 0 {
            total += try rank(
                below: upper, fromLevel: parting + 1, parentCount: walked.upper, parentLength: level, index: index,
                counts: counts, txn: txn)
        }
        return max(0, total)
    }

    /// How many groups ``count(from:below:index:counts:txn:)`` walks between the two keys' groups before it
    /// ranks the two keys instead.
    static let divergingWalkLimit = 24
}
