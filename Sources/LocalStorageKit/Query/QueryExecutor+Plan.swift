/// Choosing how a query walks, by cost (docs/DESIGN.md, "Query plans by cost").
///
/// Each constrained index's number of candidate entries is known exactly in O(log n): a range's from the count tree
/// (``CountTree``), an equality's from its key's number of duplicates, so the choice never walks to find out. The plans:
/// - **Sorted walk**: walk the sort index (or the ids, or the update times) in the query's order, check
///   each entry, stop at offset + limit. Used only while the walked range is at most
///   ``walkFactor(_:)`` times the cheapest index's candidates (16 with a limit, where the walk usually
///   stops early; 2 without), so an indexed filter never walks the whole type for few matches.
/// - **Collect and sort**: walk the cheapest index's candidates, check the other conditions, and sort the
///   matches in memory: O(candidates), smooth in the number of matches.
/// - **Equality in id order**: one equality on one index, ordered by id, reads the index's duplicates,
///   which LMDB keeps in id order, and stops at offset + limit.
extension QueryExecutor {
    /// How many times the cheapest index's candidates an ordered walk may cover at most: a walk with a
    /// limit usually stops early, one without reads every header of its range.
    static func walkFactor(_ options: FetchOptions) -> Int { options.limit == nil ? 2 : 16 }

    /// The ids of the matching records at positions offset..<end in the query's order.
    func orderedIDs(options: FetchOptions) throws -> [[UInt8]] {
        let end = options.end
        guard end > options.offset else { return [] }
        if let sortIndex = plan.sortIndex {
            let onSort = plan.constraints.first { $0.index.name == sortIndex.name }
            let sortCondition = try onSort.flatMap { constraint in
                constraint.conditions.count == 1
                    ? constraint.conditions.first : try cheapestCondition(of: constraint)?.0
            }
            // Only a condition on another index can make collecting cheaper than walking the order: without
            // one, nothing is estimated.
            if plan.constraints.contains(where: { $0.index.name != sortIndex.name }),
                let cheapest = try cheapestConstraint(), cheapest.constraint.index.name != sortIndex.name
            {
                let walked = try sortCondition.map { try estimate(sortIndex, $0) } ?? txn.entryCount(sortIndex.dbi)
                if !Self.isBounded(walked, by: cheapest.estimate, options) {
                    return try collectAndSort(
                        driving: cheapest.constraint, condition: cheapest.condition, options: options)
                }
            }
            return try walkSortIndex(sortIndex, driving: onSort, condition: sortCondition, options: options)
        }
        guard let cheapest = try cheapestConstraint() else { return try walkAll(options: options) }
        if options.sort == .id, case .points(let points) = cheapest.condition.test, points.count == 1 {
            return try equalityInIDOrder(driving: cheapest.constraint, condition: cheapest.condition, options: options)
        }
        if Self.isBounded(try txn.entryCount(schema.records), by: cheapest.estimate, options) {
            // Without the type's update order, a walk by update time sorts every header first and never stops early:
            // the matches are collected instead, and the order is noted as wanted, for the next query through the
            // store to build.
            guard try options.sort == .id || schema.keepsUpdateOrder(txn) else {
                schema.runtime.updateOrderWanted.store(true, ordering: .relaxed)
                return try collectAndSort(driving: cheapest.constraint, condition: cheapest.condition, options: options)
            }
            return try walkAll(options: options)
        }
        return try collectAndSort(driving: cheapest.constraint, condition: cheapest.condition, options: options)
    }

    /// Whether walking `walked` entries costs at most ``walkFactor(_:)`` times collecting `candidates`.
    ///
    /// With a limit, a walk stops after `offset + limit` matches: about `end × walked / candidates` entries
    /// when the matches are spread through the walked range, counted four times over to allow for matches
    /// that bunch up (an equality ordered by another index, say, reads a few hundred entries, not the range).
    static func isBounded(_ walked: Int, by candidates: Int, _ options: FetchOptions) -> Bool {
        var expected = walked
        if options.limit != nil, candidates > 0 {
            let (spread, overflow) = options.end.multipliedReportingOverflow(by: walked)
            if !overflow {
                let perMatch = spread / candidates
                expected = perMatch > walked / 4 ? walked : perMatch * 4
            }
        }
        let (limit, overflow) = candidates.multipliedReportingOverflow(by: walkFactor(options))
        return overflow || expected <= limit
    }

    // MARK: - Estimates

    /// The constraint with the fewest candidate entries, its cheapest condition and that number.
    func cheapestConstraint() throws -> (
        constraint: QueryPlan.Constraint, condition: CompiledCondition, estimate: Int
    )? {
        var best: (constraint: QueryPlan.Constraint, condition: CompiledCondition, estimate: Int)?
        for constraint in plan.constraints {
            guard let (condition, estimate) = try cheapestCondition(of: constraint) else { continue }
            if best == nil || estimate < (best?.estimate ?? Int.max) { best = (constraint, condition, estimate) }
        }
        return best
    }

    /// The condition of `constraint` with the fewest candidate entries, and that number.
    func cheapestCondition(of constraint: QueryPlan.Constraint) throws -> (CompiledCondition, Int)? {
        var best: (CompiledCondition, Int)?
        for condition in constraint.conditions {
            let seen = try estimate(constraint.index, condition)
            if best == nil || seen < (best?.1 ?? Int.max) { best = (condition, seen) }
        }
        return best
    }

    /// The number of index entries inside a condition's intervals: exact from the count tree in O(log n)
    /// per interval; without a tree (a read-only store of an older layout), walked up to a cap past which
    /// the index is taken as unselective (all its entries). The points of an equality (or `oneOf`) are counted
    /// with one seek each: a point's entries are its key's sorted duplicates, whose number LMDB keeps.
    func estimate(_ index: TypeSchema.Index, _ condition: CompiledCondition) throws -> Int {
        let intervals = condition.intervals
        if case .points = condition.test {
            return try txn.withCursor(index.dbi) { cursor in
                var total = 0
                for interval in intervals {
                    guard let entry = try cursor.seek(atLeast: interval.lower),
                        entry.key.elementsEqual(interval.lower)
                    else { continue }
                    total += try cursor.duplicateCount()
                }
                return total
            }
        }
        if let counts = schema.counts {
            var total = 0
            for interval in intervals {
                if let prefix = interval.prefix {
                    total += try treeCount(
                        index: index, counts: counts, lower: prefix, lowerInclusive: true,
                        upper: OrderedKey.successor(of: prefix), upperInclusive: false)
                } else {
                    total += try treeCount(
                        index: index, counts: counts, lower: interval.lower, lowerInclusive: true,
                        upper: interval.upper, upperInclusive: true)
                }
            }
            return total
        }
        let all = try txn.entryCount(index.dbi)
        let cap = max(QueryExecutor.estimateCap, all / 16)
        var seen = 0
        try walk(index.dbi, intervals, descending: false) { _, _ in
            seen += 1
            return seen < cap
        }
        return seen < cap ? seen : all
    }

    // MARK: - Plans

    /// Walks the sort index in the query's order (within its own condition, if any) and stops at the end.
    private func walkSortIndex(
        _ sortIndex: TypeSchema.Index, driving: QueryPlan.Constraint?, condition: CompiledCondition?,
        options: FetchOptions
    ) throws -> [[UInt8]] {
        var collector = PositionCollector(options: options)
        let intervals = condition?.intervals ?? [KeyInterval(lower: [], upper: nil, prefix: nil)]
        try walkSortedResolvingCuts(sortIndex, intervals) { key, id in
            try check(key: key, id: id, driving: driving).matches ? collector.accept(id) : true
        }
        return collector.ids
    }

    /// Walks every record in `options.sort` order (by id, or by update time), checking each header, and
    /// stops at the end: for queries whose matches are a large share of the type.
    private func walkAll(options: FetchOptions) throws -> [[UInt8]] {
        var collector = PositionCollector(options: options)
        switch options.sort {
        case .id:
            var visited = 0
            defer { schema.runtime.entriesVisited.add(visited, ordering: .relaxed) }
            try txn.withCursor(schema.records) { cursor in
                var entry = try cursor.move(.first)
                while let current = entry {
                    visited += 1
                    let view = try header(of: current.key, bytes: current.value)
                    if !view.isExpired(at: now), matches(view), !collector.accept(current.key) { break }
                    entry = try cursor.move(.next)
                }
            }
        case .newestFirst, .oldestFirst:
            var visited = 0
            defer { schema.runtime.entriesVisited.add(visited, ordering: .relaxed) }
            try UpdateOrder.forEach(schema: schema, descending: options.sort == .newestFirst, txn: txn) { _, id in
                visited += 1
                guard !isExpired(id), let view = try view(of: id), !view.isExpired(at: now), matches(view) else {
                    return true
                }
                return collector.accept(id)
            }
        }
        return collector.ids
    }

    /// One equality in id order: the index's duplicates of the value are its ids in order.
    private func equalityInIDOrder(
        driving: QueryPlan.Constraint, condition: CompiledCondition, options: FetchOptions
    ) throws -> [[UInt8]] {
        var collector = PositionCollector(options: options)
        try walk(driving.index.dbi, condition.intervals, descending: false) { key, id in
            try check(key: key, id: id, driving: driving).matches ? collector.accept(id) : true
        }
        return collector.ids
    }
}

/// Keeps the ids at positions offset..<end of a walk in result order.
struct PositionCollector {
    let offset: Int
    let end: Int
    private(set) var ids: [[UInt8]] = []
    private var position = 0

    init(options: FetchOptions) {
        offset = options.offset
        end = options.end
        if options.limit != nil { ids.reserveCapacity(min(max(end - offset, 0), 1_024)) }
    }

    /// Counts one match; returns whether the walk should go on.
    mutating func accept(_ id: UnsafeRawBufferPointer) -> Bool {
        if position >= offset { ids.append(Array(id)) }
        position += 1
        return position < end
    }
}
