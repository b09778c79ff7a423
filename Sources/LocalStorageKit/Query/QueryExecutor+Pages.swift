/// Pages of a query: one walk, or a jump through the count tree.
extension QueryExecutor {
    /// A page of a query whose one condition is a range on a number sort index, with nothing expired: from the
    /// count tree in either order, or, without one, in one walk that counts the range and collects the page's ids
    /// on the way (ascending only). Nil for any other shape (the caller counts, then walks to the page).
    func pageInOneWalk(options: FetchOptions) throws -> (total: Int, ids: [[UInt8]])? {
        guard expired.isEmpty, let sortIndex = plan.sortIndex, sortIndex.kind == .number,
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
                descending: plan.isDescending)
        }
        guard !plan.isDescending else { return nil }
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
    private func pageByRank(
        _ index: TypeSchema.Index, counts: Database, options: FetchOptions, start: [UInt8],
        startInclusive: Bool, upper: [UInt8]?, upperInclusive: Bool, descending: Bool
    ) throws
        -> (total: Int, ids: [[UInt8]])
    {
        // The rank of the range's first entry is both the total's lower end and where the page is counted
        // from: it is walked once.
        let (below, total) = try treeRange(
            index: index, counts: counts, lower: start, lowerInclusive: startInclusive, upper: upper,
            upperInclusive: upperInclusive)
        schema.runtime.countsFromTree.add(1, ordering: .relaxed)
        let wanted = min(options.end, total) - options.offset
        guard wanted > 0 else { return (total, []) }
        // Ascending, the page starts `offset` entries into the range; descending, `wanted` entries before the
        // range's last `offset`.
        let first = descending ? total - options.offset - wanted : options.offset
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
                ids.append(Array(current.value))
                entry = try cursor.move(.next)
            }
        }
        if descending { ids.reverse() }
        return (total, ids)
    }
}
