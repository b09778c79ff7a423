/// Pages of a query: one walk, or a jump through the count tree.
extension QueryExecutor {
    /// A page of a query whose one condition is a range on a number sort index: from the count tree in either
    /// order (with a few expired records not yet purged stepped over), or, without one and with nothing
    /// expired, in one walk that counts the range and collects the page's ids on the way (ascending only). Nil
    /// for any other shape (the caller counts, then walks to the page).
    func pageInOneWalk(options: FetchOptions) throws -> (total: Int, ids: [[UInt8]])? {
        guard let sortIndex = plan.sortIndex, sortIndex.kind == .number,
            plan.constraints.count == 1, let only = plan.constraints.first, only.index.name == sortIndex.name,
            only.conditions.count == 1,
            case .range(let lower, let lowerInclusive, let upper, let upperInclusive) = only.conditions[0].test
        else { return nil }
        let start = lower?.key ?? IndexKeys.firstValue
        let excludingLower = lower != nil && !lowerInclusive
        if let counts = schema.counts {
            return try pageByRank(
                sortIndex, counts: counts, options: options, start: start,
                startInclusive: !excludingLower, upper: upper?.key, upperInclusive: upperInclusive,
                descending: plan.isDescending, condition: only.conditions[0])
        }
        guard expired.isEmpty, !plan.isDescending else { return nil }
        let end = options.end
        var position = 0
        var ids: [[UInt8]] = []
        try txn.withCursor(sortIndex.dbi) { cursor in
            guard var entry = try cursor.seek(atLeast: start) else { return }
            try start.withUnsafeBytes { low in
                try (upper?.key ?? []).withUnsafeBytes { high in
                    let hasUpper = upper != nil
                    while true {
                        if hasUpper {
                            let order = ByteOrder.compare(entry.key, high)
                            if order > 0 || (order == 0 && !upperInclusive) { return }
                        }
                        if !(excludingLower && ByteOrder.equal(entry.key, low)) {
                            if position >= options.offset && position < end { ids.append(Array(entry.value)) }
                            position += 1
                        }
                        guard let next = try cursor.move(.next) else { return }
                        entry = next
                    }
                }
            }
        }
        return (position, ids)
    }

    /// The page of a number range from the count tree: the total from two ranks, then a jump straight to
    /// the page's first entry (``CountTree/locate(rank:index:counts:txn:)``) and a walk of the page alone,
    /// so page 500 costs what page 1 does. A descending page is the ascending slice that ends where it begins,
    /// reversed: a descending walk visits the index's entries, duplicates too, in exactly the reverse order.
    ///
    /// Records that expired but are not purged yet are entries the page steps over: each one in the range is
    /// placed by its rank (its key's, from the tree, and its place among that key's duplicates), the total leaves
    /// them out, and the page starts that many entries further on for each that comes before it. Nil (the caller
    /// walks) when there are more than ``expiredPlacedAtMost`` of them, or one cannot be placed cheaply.
    private func pageByRank(
        _ index: TypeSchema.Index, counts: Database, options: FetchOptions, start: [UInt8],
        startInclusive: Bool, upper: [UInt8]?, upperInclusive: Bool, descending: Bool, condition: CompiledCondition
    ) throws
        -> (total: Int, ids: [[UInt8]])?
    {
        guard expired.count <= QueryExecutor.expiredPlacedAtMost else { return nil }
        // The rank of the range's first entry is both the total's lower end and where the page is counted
        // from: it is walked once.
        let (below, entries) = try treeRange(
            index: index, counts: counts, lower: start, lowerInclusive: startInclusive, upper: upper,
            upperInclusive: upperInclusive)
        guard let skipped = try expiredRanks(in: index, counts: counts, matching: condition) else { return nil }
        schema.runtime.countsFromTree.add(1, ordering: .relaxed)
        let total = max(0, entries - skipped.count)
        let wanted = min(options.end, total) - options.offset
        guard wanted > 0 else { return (total, []) }
        // Ascending, the page starts `offset` live entries into the range; descending, `wanted` before the
        // range's last `offset`. Each expired entry at or before that place moves it on by one.
        var first = descending ? total - options.offset - wanted : options.offset
        for rank in skipped where rank - below <= first { first += 1 }
        guard
            let (groupStart, skip) = try locate(rank: below + first, index: index, counts: counts)
        else { return (total, []) }
        var ids: [[UInt8]] = []
        ids.reserveCapacity(wanted)
        try txn.withCursor(index.dbi) { cursor in
            var entry = try cursor.seek(atLeast: groupStart)
            var toSkip = skip
            while toSkip > 0, entry != nil {
                let duplicates = try cursor.duplicateCount()
                if toSkip >= duplicates {
                    toSkip -= duplicates
                    entry = try cursor.move(.nextKey)
                } else {
                    toSkip -= 1
                    entry = try cursor.move(.next)
                }
            }
            while let current = entry, ids.count < wanted {
                if !isExpired(current.value) { ids.append(Array(current.value)) }
                entry = try cursor.move(.next)
            }
        }
        if descending { ids.reverse() }
        return (total, ids)
    }

    /// How many records that expired but are not purged yet a page placed by rank steps over; with more, it walks.
    static let expiredPlacedAtMost = 64

    /// The ranks in `index` of the entries of the expired records that `condition` matches, ascending; nil when
    /// one cannot be placed cheaply (its header cannot be read, or its key has more than
    /// ``duplicatesStepsAtMost`` duplicates before it).
    private func expiredRanks(
        in index: TypeSchema.Index, counts: Database, matching condition: CompiledCondition
    ) throws -> [Int]? {
        var ranks: [Int] = []
        for id in expired {
            let stored: [UInt8]?
            do {
                stored = try id.withUnsafeBytes { id in
                    try view(of: id)?.indexValue(of: index).map { Array($0) }
                }
            } catch {
                return nil  // A damaged record: the walk steps over it by its id alone.
            }
            guard let stored, stored.withUnsafeBytes({ condition.matches(value: $0) }) else { continue }
            let key = stored.withUnsafeBytes { IndexValue.keyBytes(kind: index.kind, stored: $0) }
            let keyRank = try rank(below: key, index: index, counts: counts)
            let before = try txn.withCursor(index.dbi) { cursor -> Int? in
                guard var entry = try cursor.seek(atLeast: key) else { return nil }
                return try key.withUnsafeBytes { key in
                    try id.withUnsafeBytes { id in
                        guard ByteOrder.equal(entry.key, key) else { return nil }
                        var steps = 0
                        while !ByteOrder.equal(entry.value, id) {
                            steps += 1
                            guard steps <= QueryExecutor.duplicatesStepsAtMost, let next = try cursor.move(.next),
                                ByteOrder.equal(next.key, key)
                            else { return nil }
                            entry = next
                        }
                        return steps
                    }
                }
            }
            guard let before else { return nil }
            ranks.append(keyRank + before)
        }
        return ranks.sorted()
    }

    /// How many duplicates of an expired record's key a page steps through to place it.
    static let duplicatesStepsAtMost = 4_096
}
