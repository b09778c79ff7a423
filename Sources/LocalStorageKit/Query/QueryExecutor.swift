/// Runs a ``QueryPlan`` inside one read transaction, on index keys and record headers only.
///
/// How it picks a path: by cost, from exact candidate counts (see QueryExecutor+Plan.swift).
/// `count` walks the cheapest index and reads headers only when a condition on another index (or a
/// string value cut at the key budget) needs one. Nothing here decodes a payload.
final class QueryExecutor {
    let schema: TypeSchema
    let plan: QueryPlan
    let txn: Transaction
    let now: Int64
    /// Records that expired but are not purged yet (usually few).
    let expired: Set<[UInt8]>
    /// The hashes of ``expired``'s ids, which ``isExpired(_:)`` asks first: a walk asks for every entry it
    /// passes, and asking the set itself made an array of each id (an allocation per entry while anything of
    /// the type had expired unpurged, as a cache with time to live nearly always has between sweeps).
    private let expiredHashes: Set<Int>

    /// The fewest entries an estimate walks before it gives up, on a store without a count tree.
    static let estimateCap = 1000

    init(schema: TypeSchema, plan: QueryPlan, txn: Transaction, now: Int64) throws {
        self.schema = schema
        self.plan = plan
        self.txn = txn
        self.now = now
        expired = try RecordReader.expiredKeys(schema: schema, now: now, txn: txn)
        expiredHashes = Set(expired.map { id in id.withUnsafeBytes(QueryExecutor.hash) })
    }

    /// A hash of an id's bytes, read in place.
    private static func hash(_ id: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: id)
        return hasher.finalize()
    }

    // MARK: - Walking an index

    /// Calls `body` with (key, id) for each entry of `dbi` inside `intervals`, ascending or descending,
    /// until it returns false.
    func walk(
        _ dbi: Database, _ intervals: [KeyInterval], descending: Bool,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var visited = 0
        defer { schema.runtime.entriesVisited.add(visited, ordering: .relaxed) }
        try txn.withCursor(dbi) { cursor in
            for interval in descending ? intervals.reversed() : intervals {
                guard var entry = try start(&cursor, interval, descending: descending) else { continue }
                while true {
                    if !descending, let upper = interval.upper, OrderedKey.compare(entry.key, upper) > 0 { break }
                    if descending, OrderedKey.compare(entry.key, interval.lower) < 0 { break }
                    if let prefix = interval.prefix, !entry.key.starts(with: prefix) { break }
                    visited += 1
                    if try !body(entry.key, entry.value) { return }
                    guard let next = try cursor.move(descending ? .previous : .next) else { break }
                    entry = next
                }
            }
        }
    }

    private func start(_ cursor: inout Cursor, _ interval: KeyInterval, descending: Bool) throws -> Cursor.Entry? {
        guard descending else { return try cursor.seek(atLeast: interval.lower) }
        // Descending: position on the last entry ≤ the interval's upper end.
        let upper: [UInt8]?
        if let prefix = interval.prefix { upper = OrderedKey.successor(of: prefix) } else { upper = interval.upper }
        guard let upper else { return try cursor.move(.last) }
        guard let found = try cursor.seek(atLeast: upper) else { return try cursor.move(.last) }
        if interval.prefix == nil, found.key.elementsEqual(upper) {
            // .lastDuplicate positions without returning the key; read the pair under the cursor.
            _ = try cursor.move(.lastDuplicate)
            return try cursor.move(.current)
        }
        return try cursor.move(.previous)
    }

    // MARK: - Checking one candidate

    /// The record header of `id`, or nil when the record is missing.
    ///
    /// - Throws: `decodingFailed` naming the type and the id when the record's bytes cannot be read.
    func view(of id: UnsafeRawBufferPointer) throws -> RecordView? {
        guard let bytes = try txn.get(schema.records, key: id) else { return nil }
        return try header(of: id, bytes: bytes)
    }

    /// The header of a stored record.
    ///
    /// - Throws: `decodingFailed` naming the type and the id when the bytes cannot be read.
    func header(of id: UnsafeRawBufferPointer, bytes: UnsafeRawBufferPointer) throws -> RecordView {
        do {
            return try RecordView(fixedPartOf: bytes)
        } catch {
            let name = "\(schema.name) \"\(String(decoding: id, as: UTF8.self))\""
            // A newer version's record is not damage: repairing it would not help, and deleting it loses its data.
            if let newer = RecordView.newerLayout(of: bytes) {
                throw LocalStorageError.decodingFailed(reason: "\(name): \(newer)")
            }
            throw LocalStorageError.decodingFailed(
                reason: "\(name) is damaged (\(error)); delete it, or run localstorage verify --repair")
        }
    }

    func isExpired(_ id: UnsafeRawBufferPointer) -> Bool {
        !expired.isEmpty && expiredHashes.contains(QueryExecutor.hash(id)) && expired.contains(Array(id))
    }

    /// Whether a record (by its header) satisfies every constraint except `skipping`.
    func matches(_ view: RecordView, skipping: String? = nil) -> Bool {
        for constraint in plan.constraints where constraint.index.name != skipping {
            guard let stored = view.indexValue(of: constraint.index) else { return false }
            for condition in constraint.conditions where !condition.matches(value: stored) { return false }
        }
        return true
    }

    /// Checks an entry of the driving index: its own conditions on the key, the rest on the header.
    /// Returns whether it matches, and the header when one was read. `key` comes from a walk of the intervals of
    /// one of `driving`'s conditions (the only one when ``QueryPlan/Constraint/walkedKeysMatch``).
    func check(
        key: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer,
        driving: QueryPlan.Constraint?
    ) throws -> (matches: Bool, view: RecordView?) {
        var needsHeader = plan.constraints.count > (driving == nil ? 0 : 1)
        if let driving {
            if IndexKeys.isMissing(key) { return (false, nil) }
            if IndexKeys.isCut(key, kind: driving.index.kind) {
                needsHeader = true
            } else if !driving.walkedKeysMatch {
                for condition in driving.conditions where !condition.matches(key: key) { return (false, nil) }
            }
        }
        if isExpired(id) { return (false, nil) }
        guard needsHeader else { return (true, nil) }
        guard let view = try view(of: id), !view.isExpired(at: now) else { return (false, nil) }
        let cutDriving = driving.map { IndexKeys.isCut(key, kind: $0.index.kind) } ?? false
        return (matches(view, skipping: cutDriving ? nil : driving?.index.name), view)
    }

    /// Walks the sort index in the query's direction. Keys cut at the string budget can tie while their
    /// full values differ, so each run of equal cut keys is re-ordered by the full values from the headers.
    func walkSortedResolvingCuts(
        _ index: TypeSchema.Index, _ intervals: [KeyInterval],
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    )
        throws
    {
        let descending = plan.isDescending
        // Only a string's key can be cut: other kinds walk in the index's own order.
        guard index.kind == .string else { return try walk(index.dbi, intervals, descending: descending, body) }
        var run: (key: [UInt8], ids: [[UInt8]])?
        func flush() throws -> Bool {
            guard let current = run else { return true }
            run = nil
            var rows: [(value: [UInt8], id: [UInt8])] = []
            for id in current.ids {
                let value =
                    try id.withUnsafeBytes { try view(of: $0) }
                    .flatMap { $0.indexValue(of: index).map { Array($0) } } ?? []
                rows.append((value, id))
            }
            func precedes(_ a: (value: [UInt8], id: [UInt8]), _ b: (value: [UInt8], id: [UInt8])) -> Bool {
                let order = OrderedKey.compare(a.value, b.value)
                return order != 0 ? order < 0 : a.id.lexicographicallyPrecedes(b.id)
            }
            rows.sort { descending ? precedes($1, $0) : precedes($0, $1) }
            for row in rows {
                let keepGoing = try current.key.withUnsafeBytes { key in
                    try row.id.withUnsafeBytes { id in try body(key, id) }
                }
                if !keepGoing { return false }
            }
            return true
        }
        var stopped = false
        try walk(index.dbi, intervals, descending: descending) { key, id in
            if IndexKeys.isCut(key, kind: index.kind) {
                if let current = run, key.elementsEqual(current.key) {
                    run?.ids.append(Array(id))
                    return true
                }
                if try !flush() {
                    stopped = true
                    return false
                }
                run = (Array(key), [Array(id)])
                return true
            }
            if try !flush() {
                stopped = true
                return false
            }
            return try body(key, id)
        }
        if !stopped { _ = try flush() }
    }

    /// Collects every match from a small driving index, then orders them as asked.
    func collectAndSort(
        driving: QueryPlan.Constraint, condition: CompiledCondition,
        options: FetchOptions
    ) throws -> [[UInt8]] {
        var rows: [(sortValue: [UInt8]?, time: Int64, id: [UInt8])] = []
        let sortIndex = plan.sortIndex
        let needsHeader = sortIndex != nil || options.sort != .id
        try walk(driving.index.dbi, condition.intervals, descending: false) { key, id in
            let (matches, header) = try check(key: key, id: id, driving: driving)
            guard matches else { return true }
            if needsHeader {
                guard let view = try header ?? view(of: id) else { return true }
                let sortValue = sortIndex.flatMap { index in view.indexValue(of: index).map { Array($0) } }
                rows.append((sortValue, view.updatedAt, Array(id)))
            } else {
                rows.append((nil, 0, Array(id)))
            }
            return true
        }
        let descending = sortIndex != nil ? plan.isDescending : options.sort == .newestFirst
        func precedes(
            _ a: (sortValue: [UInt8]?, time: Int64, id: [UInt8]),
            _ b: (sortValue: [UInt8]?, time: Int64, id: [UInt8])
        ) -> Bool {
            if sortIndex != nil {
                switch (a.sortValue, b.sortValue) {
                case (nil, nil): break
                case (nil, _): return true
                case (_, nil): return false
                case (let x?, let y?):
                    let order = OrderedKey.compare(x, y)
                    if order != 0 { return order < 0 }
                }
            } else if options.sort != .id, a.time != b.time {
                // As the update-time order's keys sort them (the time's bits, big-endian), which differs from the
                // times' own order only before 1970: both plans give one order.
                return UInt64(bitPattern: a.time) < UInt64(bitPattern: b.time)
            }
            return a.id.lexicographicallyPrecedes(b.id)
        }
        rows.sort { descending ? precedes($1, $0) : precedes($0, $1) }
        let end = min(options.end, rows.count)
        guard options.offset < end else { return [] }
        return rows[options.offset..<end].map(\.id)
    }
}
