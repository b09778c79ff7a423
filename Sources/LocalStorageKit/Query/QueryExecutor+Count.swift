/// Counting on index keys: ``QueryExecutor/count()`` and the range counts it uses. Nothing is decoded.
extension QueryExecutor {
    // MARK: - Count

    /// The number of live records matching every condition. Decodes nothing.
    func count() throws -> Int {
        if plan.constraints.count == 1, let only = plan.constraints.first, only.conditions.count == 1,
            let counted = try countByTree(only, only.conditions[0])
        {
            schema.runtime.countsFromTree.add(1, ordering: .relaxed)
            return counted
        }
        schema.runtime.countsByWalking.add(1, ordering: .relaxed)
        return try countByWalking()
    }

    /// Counts by walking the cheapest index (equality by its duplicate counts).
    private func countByWalking() throws -> Int {
        if plan.constraints.count == 1, let only = plan.constraints.first, only.conditions.count == 1,
            let counted = try countByKeysLessExpired(only, only.conditions[0])
        {
            return counted
        }
        guard let (driving, condition, _) = try cheapestConstraint() else {
            if plan.constraints.isEmpty { return try RecordReader.count(schema: schema, now: now, txn: txn) }
            return 0
        }
        if plan.constraints.count == 1, let counted = try countByKeysLessExpired(driving, condition) {
            return counted
        }
        var total = 0
        try walk(driving.index.dbi, condition.intervals, descending: false) { key, id in
            if try check(key: key, id: id, driving: driving).matches { total += 1 }
            return true
        }
        return total
    }

    /// Counts a range or prefix condition from the count tree (``CountTree``): the same cost for 100 or
    /// 100,000 matches. Records that expired but are not purged yet are read and subtracted. Nil when the
    /// tree cannot answer: the store has none (read-only, older layout), or a bound is a string cut at the
    /// key budget (such keys must be checked against their records).
    func countByTree(_ driving: QueryPlan.Constraint, _ condition: CompiledCondition) throws -> Int? {
        guard let counts = schema.counts else { return nil }
        let index = driving.index
        func isCut(_ key: [UInt8]) -> Bool { key.withUnsafeBytes { IndexKeys.isCut($0, kind: index.kind) } }
        var total: Int
        switch condition.test {
        case .range(let lower, let lowerInclusive, let upper, let upperInclusive):
            if let lower, isCut(lower.key) { return nil }
            if let upper, isCut(upper.key) { return nil }
            total = try treeCount(
                index: index, counts: counts,
                lower: lower?.key ?? IndexKeys.firstValue,
                lowerInclusive: lower == nil || lowerInclusive,
                upper: upper?.key, upperInclusive: upperInclusive)
        case .prefix(let key, _, let keyIsCut):
            if keyIsCut { return nil }
            let lower = OrderedKey.compare(key, IndexKeys.firstValue) < 0 ? IndexKeys.firstValue : key
            total = try treeCount(
                index: index, counts: counts, lower: lower, lowerInclusive: true,
                upper: OrderedKey.successor(of: key), upperInclusive: false)
        case .points:
            return nil
        }
        for id in expired {
            let counted = try id.withUnsafeBytes { id -> Bool in
                guard let view = try view(of: id), let stored = view.indexValue(of: index) else { return false }
                return condition.matches(value: stored)
            }
            if counted { total -= 1 }
        }
        return max(0, total)
    }

    /// ``countByKeys(_:_:)`` less the records that expired but are not purged yet which it counted; nil when
    /// those are more than a quarter of the keys counted (walking the matches, which leaves them out, costs less
    /// than reading as many headers then). Before,
    /// a single expired record anywhere in the type made every such count walk its matches (review-95 F1: a
    /// cache with time-to-live nearly always holds one between sweeps).
    private func countByKeysLessExpired(
        _ driving: QueryPlan.Constraint, _ generator: CompiledCondition
    ) throws
        -> Int?
    {
        let keys = try countByKeys(driving, generator)
        guard !expired.isEmpty else { return keys }
        guard expired.count <= keys / 4 else { return nil }
        let kind = driving.index.kind
        var counted = 0
        for id in expired {
            let wasCounted = try id.withUnsafeBytes { id -> Bool in
                guard let view = try view(of: id), let stored = view.indexValue(of: driving.index),
                    driving.conditions.allSatisfy({ $0.matches(value: stored) })
                else { return false }
                // A key cut at the string budget was checked against its record, which left an expired one out.
                return !IndexValue.keyBytes(kind: kind, stored: stored).withUnsafeBytes {
                    IndexKeys.isCut($0, kind: kind)
                }
            }
            if wasCounted { counted += 1 }
        }
        return max(0, keys - counted)
    }

    // MARK: - The count tree

    /// The number of entries of `index` with keys between `lower` and `upper` (nil: no upper bound), from
    /// the count tree: from where the two bounds' groups part (``CountTree/count(from:below:index:counts:txn:)``,
    /// noted as the two walks it replaces), or from one rank without an upper bound.
    func treeCount(
        index: TypeSchema.Index, counts: Database, lower: [UInt8], lowerInclusive: Bool, upper: [UInt8]?,
        upperInclusive: Bool
    ) throws -> Int {
        if let upper {
            schema.runtime.treeWalks.add(2, ordering: .relaxed)
            return try CountTree.count(
                from: lowerInclusive ? lower : lower + [0], below: upperInclusive ? upper + [0] : upper,
                index: index, counts: counts, txn: txn)
        }
        return try treeRange(
            index: index, counts: counts, lower: lower, lowerInclusive: lowerInclusive, upper: upper,
            upperInclusive: upperInclusive
        ).total
    }

    /// The rank of the range's first entry (how many entries sort before it) and the number of entries in the
    /// range, from two ranks in the count tree.
    func treeRange(
        index: TypeSchema.Index, counts: Database, lower: [UInt8], lowerInclusive: Bool, upper: [UInt8]?,
        upperInclusive: Bool
    ) throws -> (below: Int, total: Int) {
        let below = try rank(below: lowerInclusive ? lower : lower + [0], index: index, counts: counts)
        let above = try upper.map { try rank(below: upperInclusive ? $0 + [0] : $0, index: index, counts: counts) }
        return (below, max(0, try (above ?? txn.entryCount(index.dbi)) - below))
    }

    /// ``CountTree/rank(below:index:counts:txn:)``, noted in the type's ``SchemaRuntime/treeWalks``.
    func rank(below key: [UInt8], index: TypeSchema.Index, counts: Database) throws -> Int {
        schema.runtime.treeWalks.add(1, ordering: .relaxed)
        return try CountTree.rank(below: key, index: index, counts: counts, txn: txn)
    }

    /// ``CountTree/locate(rank:index:counts:txn:)``, noted in the type's ``SchemaRuntime/treeWalks``.
    func locate(rank: Int, index: TypeSchema.Index, counts: Database) throws -> (start: [UInt8], skip: Int)? {
        schema.runtime.treeWalks.add(1, ordering: .relaxed)
        return try CountTree.locate(rank: rank, index: index, counts: counts, txn: txn)
    }

    /// Counts a query whose conditions are all on one index from the keys alone, records that expired but are not
    /// purged yet included. Equality walks one step per value and adds its number of duplicates (`mdb_cursor_count`);
    /// ranges and prefixes take one cursor step per entry and evaluate the conditions once per distinct
    /// key. Keys cut at the string budget are checked one record at a time.
    func countByKeys(_ driving: QueryPlan.Constraint, _ generator: CompiledCondition) throws -> Int {
        if driving.conditions.count == 1,
            case .range(let lower, let lowerInclusive, let upper, let upperInclusive) = generator.test
        {
            return try countRange(
                driving, lower: lower?.key ?? IndexKeys.firstValue,
                excludingLower: lower != nil && !lowerInclusive,
                upper: upper?.key, upperInclusive: upperInclusive)
        }
        var total = 0
        let kind = driving.index.kind
        let conditions = driving.conditions
        let isPoints: Bool
        if case .points = generator.test { isPoints = true } else { isPoints = false }
        try txn.withCursor(driving.index.dbi) { cursor in
            for interval in generator.intervals {
                var entry = try cursor.seek(atLeast: interval.lower)
                var previous: (key: UnsafeRawBufferPointer, matched: Bool)?
                while let current = entry {
                    if let last = previous, ByteOrder.equal(current.key, last.key) {
                        total += last.matched ? 1 : 0
                        entry = try cursor.move(.next)
                        continue
                    }
                    if let upper = interval.upper, OrderedKey.compare(current.key, upper) > 0 { break }
                    if let prefix = interval.prefix, !current.key.starts(with: prefix) { break }
                    if IndexKeys.isCut(current.key, kind: kind) {
                        previous = nil
                        total += try check(key: current.key, id: current.value, driving: driving).matches ? 1 : 0
                        entry = try cursor.move(.next)
                        continue
                    }
                    let matched =
                        !current.key.elementsEqual(IndexKeys.missing)
                        && conditions.allSatisfy { $0.matches(key: current.key) }
                    if isPoints {
                        total += matched ? try cursor.duplicateCount() : 0
                        entry = try cursor.move(.nextKey)
                    } else {
                        total += matched ? 1 : 0
                        previous = (current.key, matched)
                        entry = try cursor.move(.next)
                    }
                }
            }
        }
        return total
    }

    /// Counts the entries of one range: one cursor step and at most two memcmp per entry. The walk
    /// starts at the lower bound, so only an excluded lower bound and the upper bound need checks.
    func countRange(
        _ driving: QueryPlan.Constraint, lower: [UInt8], excludingLower: Bool,
        upper: [UInt8]?, upperInclusive: Bool
    ) throws -> Int {
        let isString = driving.index.kind == .string
        var total = 0
        try txn.withCursor(driving.index.dbi) { cursor in
            guard var entry = try cursor.seek(atLeast: lower) else { return }
            try lower.withUnsafeBytes { low in
                try (upper ?? []).withUnsafeBytes { high in
                    let hasUpper = upper != nil
                    while true {
                        let key = entry.key
                        let isCut = isString && key.count >= 2 && key[key.count - 2] == 0 && key[key.count - 1] == 2
                        if hasUpper {
                            let order = ByteOrder.compare(key, high)
                            if order > 0 || (order == 0 && !upperInclusive && !isCut) { return }
                        }
                        if isCut {
                            total += try check(key: key, id: entry.value, driving: driving).matches ? 1 : 0
                        } else if !(excludingLower && ByteOrder.equal(key, low)) {
                            total += 1
                        }
                        guard let next = try cursor.move(.next) else { return }
                        entry = next
                    }
                }
            }
        }
        return total
    }
}
