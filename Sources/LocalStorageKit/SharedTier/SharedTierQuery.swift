/// Runs a ``QueryPlan`` on the shared tier: sorted sets of `ordered key ‖ id` members walked with
/// `ZRANGEBYLEX` (the same memcmp order as LMDB's index databases), conditions checked on the record headers
/// the server holds, counts with `ZLEXCOUNT` where one range says it all.
///
/// The rows are the ones the local query gives on the same data: the same order (index value, ties by id,
/// no value first ascending and last descending; `.id`, `.newestFirst`, `.oldestFirst` without an index
/// order), the same conditions (checked on the header values, exactly as locally), expired records left out.
/// Expired records are swept from the sets first (their keys expire by themselves).
struct SharedTierQuery {
    let tier: SharedTier
    let schema: TypeSchema
    let plan: QueryPlan

    private var type: [UInt8] { SharedTierLayout.escape(schema.name) }
    private static let chunk = 512

    // MARK: - Entry points

    /// The number of live records matching the plan.
    func count() async throws -> Int {
        try await sweep()
        if plan.constraints.isEmpty {
            let reply = try await tier.connection.callUnlessCancelled([
                Array("ZCARD".utf8), tier.layout.ids(type: type),
            ])
            guard let count = reply.int, count >= 0 else { throw unexpected("ZCARD", reply) }
            return Int(count)
        }
        if plan.constraints.count == 1, let only = plan.constraints.first, only.conditions.count == 1,
            let ranges = Self.exactRanges(only.conditions[0])
        {
            let key = tier.layout.index(type: type, name: only.index.name)
            return try await lexCount(key, ranges)
        }
        return try await collect(needsBytes: false).count
    }

    /// The live records matching the plan in the query's order, from `options.offset`, at most `options.limit`.
    func fetch<T: LocalStorable>(_ type: T.Type, options: FetchOptions, session: DecodeSession) async throws -> [T] {
        let end = options.end
        guard end > 0, options.limit != 0 else { return [] }
        try await sweep()
        let rows: [Row]
        if let sortIndex = plan.sortIndex {
            rows = try await walkSorted(sortIndex, end: end)
        } else if !plan.constraints.isEmpty {
            rows = try await collect(needsBytes: true).sorted(by: order(options.sort))
        } else {
            rows = try await walkAll(options.sort, end: end)
        }
        guard options.offset < rows.count else { return [] }
        var items: [T] = []
        for row in rows[options.offset..<min(end, rows.count)] {
            guard let bytes = row.bytes else { continue }
            let item = try bytes.withUnsafeBytes { buffer in
                try row.id.withUnsafeBytes { id in try session.decodeRow(T.self, bytes: buffer, id: id) }
            }
            items.append(item)
        }
        return items
    }

    // MARK: - Rows

    /// A matching record: its id, its header's sort value and update time, and its bytes when kept.
    private struct Row {
        let id: [UInt8]
        let sortValue: [UInt8]?
        let updatedAt: Int64
        let bytes: [UInt8]?
    }

    /// The row of `bytes` when the record is live and matches every condition.
    ///
    /// - Throws: `decodingFailed` naming the type and the id when the server holds bytes that are not a record
    ///   (as a local query that meets a damaged record does).
    private func row(id: [UInt8], bytes: [UInt8]?, now: Int64, keepBytes: Bool) throws -> Row? {
        guard let bytes else { return nil }
        return try bytes.withUnsafeBytes { buffer -> Row? in
            let view = try RecordDecoding.view(
                of: buffer, typeName: schema.name, id: String(decoding: id, as: UTF8.self), sharedTier: true)
            guard !view.isExpired(at: now) else { return nil }
            guard plan.matches(try view.header(in: schema, txn: nil).indexValues) else { return nil }
            let sortValue = plan.sortIndex.flatMap { index in view.indexValue(of: index).map { Array($0) } }
            return Row(id: id, sortValue: sortValue, updatedAt: view.updatedAt, bytes: keepBytes ? bytes : nil)
        }
    }

    /// The order of rows collected without an index order: as the local query's `collectAndSort`.
    private func order(_ sort: FetchOptions.Sort) -> (Row, Row) -> Bool {
        let descending = sort == .newestFirst
        func precedes(_ a: Row, _ b: Row) -> Bool {
            if sort != .id, a.updatedAt != b.updatedAt { return a.updatedAt < b.updatedAt }
            return a.id.lexicographicallyPrecedes(b.id)
        }
        return { descending ? precedes($1, $0) : precedes($0, $1) }
    }

    // MARK: - Paths

    /// Every record matching the plan, through its cheapest constraint (fewest members in range).
    private func collect(needsBytes: Bool) async throws -> [Row] {
        var best: (ranges: [(min: [UInt8], max: [UInt8])], key: [UInt8], count: Int)?
        for constraint in plan.constraints {
            guard let condition = constraint.conditions.first else { continue }
            let ranges = Self.coveringRanges(condition)
            let key = tier.layout.index(type: type, name: constraint.index.name)
            let total = try await lexCount(key, ranges)
            if best.map({ total < $0.count }) ?? true { best = (ranges, key, total) }
        }
        guard let best else { return [] }
        let kind =
            plan.constraints.first { tier.layout.index(type: type, name: $0.index.name) == best.key }?.index.kind
            ?? .string
        var ids: [[UInt8]] = []
        var seen = Set<[UInt8]>()
        for range in best.ranges {
            var low = range.min
            while true {
                let members = try await self.range(best.key, low, range.max, reverse: false)
                for member in members {
                    guard let id = Self.id(of: member, kind: kind), seen.insert(id).inserted else { continue }
                    ids.append(id)
                }
                guard members.count == Self.chunk, let last = members.last else { break }
                low = Self.after(last)
            }
        }
        let records = try await tier.records(keys: ids.map { tier.layout.record(type: type, id: $0) })
        let now = tier.clock.wallNanoseconds()
        return try zip(ids, records).compactMap { try row(id: $0, bytes: $1, now: now, keepBytes: needsBytes) }
    }

    /// Walks the sort index in the query's direction until `end` rows matched.
    private func walkSorted(_ sortIndex: TypeSchema.Index, end: Int) async throws -> [Row] {
        let key = tier.layout.index(type: type, name: sortIndex.name)
        let descending = plan.isDescending
        var ranges: [(min: [UInt8], max: [UInt8])] = [(Array("-".utf8), Array("+".utf8))]
        if let condition = plan.constraints.first(where: { $0.index.name == sortIndex.name })?.conditions.first {
            ranges = Self.coveringRanges(condition)
        }
        if descending { ranges.reverse() }
        var rows: [Row] = []
        for range in ranges {
            try await collect(key, from: range.min, to: range.max, reverse: descending, end: end, into: &rows) {
                Self.id(of: $0, kind: sortIndex.kind)
            }
            if rows.count >= end { break }
        }
        return rows
    }

    /// Walks every record by id or by update time until `end` rows were found.
    private func walkAll(_ sort: FetchOptions.Sort, end: Int) async throws -> [Row] {
        let byTime = sort != .id
        let key = byTime ? tier.layout.updated(type: type) : tier.layout.ids(type: type)
        var rows: [Row] = []
        try await collect(
            key, from: Array("-".utf8), to: Array("+".utf8), reverse: sort == .newestFirst, end: end,
            into: &rows
        ) { byTime ? Array($0.dropFirst(8)) : $0 }
        return rows
    }

    /// Reads the members of sorted set `key` between `min` and `max` a chunk at a time, and the records they
    /// name (`id` turns a member into a record id, nil to skip it), until `rows` holds `end` live rows.
    private func collect(
        _ key: [UInt8], from min: [UInt8], to max: [UInt8], reverse: Bool, end: Int,
        into rows: inout [Row], id: ([UInt8]) -> [UInt8]?
    ) async throws {
        var (low, high) = (min, max)
        while rows.count < end {
            let members = try await range(key, low, high, reverse: reverse)
            let ids = members.compactMap(id)
            let records = try await tier.records(keys: ids.map { tier.layout.record(type: type, id: $0) })
            let now = tier.clock.wallNanoseconds()
            for (id, bytes) in zip(ids, records) {
                if let row = try row(id: id, bytes: bytes, now: now, keepBytes: true) { rows.append(row) }
                if rows.count >= end { break }
            }
            guard members.count == Self.chunk, let last = members.last else { break }
            if reverse { high = Self.after(last) } else { low = Self.after(last) }
        }
    }

    /// The lex bound that excludes `member`: the next chunk starts past the last member read, not at an offset,
    /// so members another instance adds or removes meanwhile shift nothing (an offset would skip or repeat rows).
    private static func after(_ member: [UInt8]) -> [UInt8] { [UInt8(ascii: "(")] + member }

    // MARK: - Server calls

    /// Removes expired records and their members from the namespace (the scripts also do it on every write).
    private func sweep() async throws {
        for _ in 0..<100 {
            let reply = try tier.expectSuccess(
                try await tier.run("sweep", SharedTierScripts.sweep, []), script: "sweep")
            guard let swept = reply.int else { throw unexpected("the sweep script", reply) }
            if swept < 1000 { return }
        }
    }

    /// The first chunk of members between `min` and `max` (lex bounds), ascending or descending.
    private func range(
        _ key: [UInt8], _ min: [UInt8], _ max: [UInt8],
        reverse: Bool
    ) async throws -> [[UInt8]] {
        let command: [[UInt8]] =
            reverse
            ? [Array("ZREVRANGEBYLEX".utf8), key, max, min]
            : [Array("ZRANGEBYLEX".utf8), key, min, max]
        let reply = try await tier.connection.callUnlessCancelled(
            command + [
                Array("LIMIT".utf8), Array("0".utf8),
                Array(String(Self.chunk).utf8),
            ])
        guard let elements = reply.elements else { throw unexpected("ZRANGEBYLEX", reply) }
        return elements.compactMap(\.bytes)
    }

    /// How many members of the sorted set `key` lie in `ranges`, in one pipelined round trip.
    private func lexCount(_ key: [UInt8], _ ranges: [(min: [UInt8], max: [UInt8])]) async throws -> Int {
        let replies = try await tier.connection.sendUnlessCancelled(
            ranges.map { [Array("ZLEXCOUNT".utf8), key, $0.min, $0.max] })
        var total = 0
        for reply in replies {
            guard let count = reply.int, count >= 0, case (let sum, false) = total.addingReportingOverflow(Int(count))
            else { throw unexpected("ZLEXCOUNT", reply) }
            total = sum
        }
        return total
    }

    private func unexpected(_ what: String, _ reply: RESPValue) -> LocalStorageError {
        .sharedTierUnavailable("\(what) at \(tier.endpoint.label) replied \(reply.summary)")
    }

    // MARK: - Lex ranges

    /// The id in a member `ordered key ‖ id` of an index of `kind`.
    static func id(of member: [UInt8], kind: IndexKind) -> [UInt8]? {
        if member.count >= 2 && member[0] == 0 && member[1] == 0 { return Array(member[2...]) }
        switch kind {
        case .number:
            return member.count > 11 ? Array(member[11...]) : nil
        case .string:
            var index = 0
            while index + 1 < member.count {
                if member[index] == 0 {
                    switch member[index + 1] {
                    case 0xFF: index += 2
                    case 0x01, 0x02: return Array(member[(index + 2)...])
                    default: return nil
                    }
                } else {
                    index += 1
                }
            }
            return nil
        }
    }

    private static func inclusive(_ bytes: [UInt8]) -> [UInt8] { [UInt8(ascii: "[")] + bytes }
    private static func exclusive(_ bytes: [UInt8]) -> [UInt8] { [UInt8(ascii: "(")] + bytes }
    /// Below every member whose key starts with `prefix`… and above none: `(successor`, or `+`.
    private static func above(_ prefix: [UInt8]) -> [UInt8] {
        OrderedKey.successor(of: prefix).map(exclusive) ?? Array("+".utf8)
    }

    /// Lex ranges holding every member that can match `condition` (a superset: headers decide).
    static func coveringRanges(_ condition: CompiledCondition) -> [(min: [UInt8], max: [UInt8])] {
        condition.intervals.map { interval in
            let min = inclusive(interval.lower.isEmpty ? IndexKeys.firstValue : interval.lower)
            let max: [UInt8]
            if let prefix = interval.prefix {
                max = above(prefix)
            } else if let upper = interval.upper {
                max = above(upper)
            } else {
                max = Array("+".utf8)
            }
            return (min, max)
        }
    }

    /// Lex ranges holding exactly the members that match `condition`, or nil when keys cut at the string
    /// budget make the keys alone undecidable (then headers decide).
    static func exactRanges(_ condition: CompiledCondition) -> [(min: [UInt8], max: [UInt8])]? {
        func isCut(_ key: [UInt8]) -> Bool { key.count >= 2 && key[key.count - 2] == 0 && key[key.count - 1] == 2 }
        switch condition.test {
        case .points(let points):
            guard !points.contains(where: { isCut($0.key) }) else { return nil }
            return points.map { (inclusive($0.key), above($0.key)) }
        case .range(let lower, let lowerInclusive, let upper, let upperInclusive):
            if let lower, isCut(lower.key) { return nil }
            if let upper, isCut(upper.key) { return nil }
            let min: [UInt8]
            if let lower {
                min = lowerInclusive ? inclusive(lower.key) : above(lower.key)
            } else {
                min = inclusive(IndexKeys.firstValue)
            }
            let max: [UInt8]
            if let upper {
                max = upperInclusive ? above(upper.key) : exclusive(upper.key)
            } else {
                max = Array("+".utf8)
            }
            // `above` gives an exclusive bound; as a lower bound it must be inclusive of the successor.
            let fixedMin = min.first == UInt8(ascii: "(") ? [UInt8(ascii: "[")] + min.dropFirst() : min
            return [(fixedMin, max)]
        case .prefix(let key, _, let keyIsCut):
            guard !keyIsCut else { return nil }
            return [(inclusive(key.isEmpty ? IndexKeys.firstValue : key), above(key))]
        }
    }
}
