/// A validated query: its conditions grouped by index, and its order.
struct QueryPlan: Sendable {
    /// The conditions on one index. A class: the executor hands the driving constraint to every entry it
    /// checks, and a copy is then one retain instead of one per string and array it holds.
    final class Constraint: Sendable {
        let index: TypeSchema.Index
        let conditions: [CompiledCondition]
        /// Whether every key a walk of the conditions' intervals meets matches them: one range with inclusive (or
        /// no) bounds on a number index (a string's bounds can be cut at the key budget), so that the walk's own
        /// bounds are the test and ``QueryExecutor/check(key:id:driving:)`` skips it.
        let walkedKeysMatch: Bool

        init(index: TypeSchema.Index, conditions: [CompiledCondition]) {
            self.index = index
            self.conditions = conditions
            if index.kind != .string, conditions.count == 1,
                case .range(let lower, let lowerInclusive, let upper, let upperInclusive) = conditions[0].test
            {
                walkedKeysMatch = (lower == nil || lowerInclusive) && (upper == nil || upperInclusive)
            } else {
                walkedKeysMatch = false
            }
        }
    }

    let constraints: [Constraint]
    let sortIndex: TypeSchema.Index?
    let isDescending: Bool
    /// The declaration the plan's indexes belong to (``TypeSchema/signature``).
    let signature: UInt64

    /// Whether a record with these header index values meets every condition (false for no record).
    func matches(_ values: [StoredIndexValue]?) -> Bool {
        guard let values else { return false }
        return constraints.allSatisfy { constraint in
            guard
                let value = values.first(where: {
                    $0.kind == constraint.index.kind && $0.name.utf8.elementsEqual(constraint.index.nameBytes)
                })
            else { return false }
            return value.bytes.withUnsafeBytes { bytes in
                constraint.conditions.allSatisfy { $0.matches(value: bytes) }
            }
        }
    }

    /// Whether `change` may alter the result of a query with this plan: always, unless the writer knew the
    /// record's index values before and after, under this plan's declaration, and the conditions hold for neither.
    /// Under another declaration (an index this one adds) the values cannot tell.
    func mayBeAffected(by change: PublishedChange) -> Bool {
        guard !constraints.isEmpty, let region = change.region, region.signature == signature else { return true }
        return matches(region.old) || matches(region.new)
    }

    /// Validates `filters` and `sort` against the type's declaration.
    ///
    /// - Throws: `unknownIndex` for an index the type does not declare; `invalidQuery` for a value of
    ///   the wrong kind, NaN, or a prefix on a number index.
    init(filters: [StorageIndexFilter], sort: StorageIndexSort?, schema: TypeSchema) throws(LocalStorageError) {
        var grouped: [(index: TypeSchema.Index, conditions: [CompiledCondition])] = []
        for filter in filters {
            guard let index = schema.index(named: filter.indexName) else {
                throw .unknownIndex(filter.indexName)
            }
            let condition = try QueryPlan.compile(filter.condition, on: index)
            if let position = grouped.firstIndex(where: { $0.index.name == index.name }) {
                grouped[position].conditions.append(condition)
            } else {
                grouped.append((index, [condition]))
            }
        }
        constraints = grouped.map { Constraint(index: $0.index, conditions: $0.conditions) }
        if let sort {
            guard let index = schema.index(named: sort.indexName) else { throw .unknownIndex(sort.indexName) }
            sortIndex = index
        } else {
            sortIndex = nil
        }
        isDescending = sort?.isDescending ?? false
        signature = schema.signature
    }

    private static func compile(
        _ condition: StorageIndexFilter.Condition,
        on index: TypeSchema.Index
    ) throws(LocalStorageError) -> CompiledCondition {
        func bound(_ value: IndexValue) throws(LocalStorageError) -> QueryBound {
            guard value.kind == index.kind else {
                let expected = index.kind == .string ? "strings" : "numbers"
                throw .invalidQuery("index \"\(index.name)\" holds \(expected); the filter gives \(value.kindName)")
            }
            return try QueryBound(value)
        }
        switch condition {
        case .equals(let value):
            return CompiledCondition(test: .points([try bound(value)]))
        case .oneOf(let values):
            var points: [QueryBound] = []
            for value in values { points.append(try bound(value)) }
            points.sort {
                $0.key == $1.key
                    ? $0.value.lexicographicallyPrecedes($1.value) : $0.key.lexicographicallyPrecedes($1.key)
            }
            // Repeats are dropped by value, not by key: two long strings cut to one index key are two points.
            var unique: [QueryBound] = []
            for point in points where unique.last.map({ $0.key != point.key || $0.value != point.value }) ?? true {
                unique.append(point)
            }
            return CompiledCondition(test: .points(unique))
        case .atLeast(let value):
            return CompiledCondition(
                test: .range(
                    lower: try bound(value), lowerInclusive: true, upper: nil,
                    upperInclusive: false))
        case .greaterThan(let value):
            return CompiledCondition(
                test: .range(
                    lower: try bound(value), lowerInclusive: false, upper: nil,
                    upperInclusive: false))
        case .atMost(let value):
            return CompiledCondition(
                test: .range(
                    lower: nil, lowerInclusive: false, upper: try bound(value),
                    upperInclusive: true))
        case .lessThan(let value):
            return CompiledCondition(
                test: .range(
                    lower: nil, lowerInclusive: false, upper: try bound(value),
                    upperInclusive: false))
        case .between(let low, let high):
            return CompiledCondition(
                test: .range(
                    lower: try bound(low), lowerInclusive: true,
                    upper: try bound(high), upperInclusive: true))
        case .hasPrefix(let prefix):
            guard index.kind == .string else {
                throw .invalidQuery("hasPrefix needs a string index; \"\(index.name)\" holds numbers")
            }
            let encoded = OrderedKey.encodePrefix(prefix)
            return CompiledCondition(
                test: .prefix(
                    key: encoded.bytes, value: Array(prefix.utf8),
                    keyIsCut: encoded.isTruncated))
        }
    }
}
