/// A bound of a condition in both of the forms it is compared in.
struct QueryBound: Sendable {
    /// The ordered key encoding (what index keys hold).
    let key: [UInt8]
    /// The form a record header stores: a string's UTF-8, a number's ordered key.
    let value: [UInt8]

    init(_ value: IndexValue) throws(LocalStorageError) {
        guard let key = value.keyBytes, let stored = value.storedBytes else {
            throw .invalidQuery("NaN cannot be compared; use a number")
        }
        self.key = key
        self.value = stored
    }
}

/// A run of index keys to walk: from `lower` up to `upper` (both inclusive), or every key with `prefix`.
struct KeyInterval: Sendable {
    var lower: [UInt8]
    var upper: [UInt8]?
    var prefix: [UInt8]?
}

/// Index-key constants shared by writers and queries.
enum IndexKeys {
    /// The key of a record that has no value for an index. It sorts before every value's encoding
    /// (strings start `00 01`/`00 FF` or a nonzero byte, numbers with a tag ≥ `0x10`), so such records
    /// come first ascending and last descending, and a walk over values starts after it.
    static let missing: [UInt8] = [0x00, 0x00]
    /// The smallest key a value can have.
    static let firstValue: [UInt8] = [0x00, 0x01]

    /// Whether a string index key was cut at the budget (its full value lives in the record header).
    @inline(__always)
    static func isCut(_ key: UnsafeRawBufferPointer, kind: IndexKind) -> Bool {
        kind == .string && key.count >= 2 && key[key.count - 2] == 0 && key[key.count - 1] == 2
    }
}

/// One filter, compiled into byte comparisons.
struct CompiledCondition: Sendable {
    enum Test: Sendable {
        /// The value is one of these (sorted by key, no repeats).
        case points([QueryBound])
        case range(lower: QueryBound?, lowerInclusive: Bool, upper: QueryBound?, upperInclusive: Bool)
        case prefix(key: [UInt8], value: [UInt8], keyIsCut: Bool)
    }

    let test: Test

    /// Whether an uncut index key satisfies the condition (exact: see ``OrderedKey``'s ordering notes).
    func matches(key: UnsafeRawBufferPointer) -> Bool {
        switch test {
        case .points(let points):
            return points.contains { key.elementsEqual($0.key) }
        case .range(let lower, let lowerInclusive, let upper, let upperInclusive):
            return within(key, lower?.key, lowerInclusive, upper?.key, upperInclusive)
        case .prefix(let prefix, _, let keyIsCut):
            return !keyIsCut && key.starts(with: prefix)
        }
    }

    /// Whether a value as a record header stores it satisfies the condition.
    func matches(value: UnsafeRawBufferPointer) -> Bool {
        switch test {
        case .points(let points):
            return points.contains { value.elementsEqual($0.value) }
        case .range(let lower, let lowerInclusive, let upper, let upperInclusive):
            return within(value, lower?.value, lowerInclusive, upper?.value, upperInclusive)
        case .prefix(_, let prefix, _):
            return value.starts(with: prefix)
        }
    }

    private func within(_ bytes: UnsafeRawBufferPointer, _ lower: [UInt8]?, _ lowerInclusive: Bool,
                        _ upper: [UInt8]?, _ upperInclusive: Bool) -> Bool {
        if let lower {
            let order = OrderedKey.compare(bytes, lower)
            if order < 0 || (order == 0 && !lowerInclusive) { return false }
        }
        if let upper {
            let order = OrderedKey.compare(bytes, upper)
            if order > 0 || (order == 0 && !upperInclusive) { return false }
        }
        return true
    }

    /// The runs of index keys that can hold matches, in ascending order.
    var intervals: [KeyInterval] {
        switch test {
        case .points(let points):
            return points.map { KeyInterval(lower: $0.key, upper: $0.key, prefix: nil) }
        case .range(let lower, _, let upper, _):
            return [KeyInterval(lower: lower?.key ?? IndexKeys.firstValue, upper: upper?.key, prefix: nil)]
        case .prefix(let key, _, _):
            return [KeyInterval(lower: key.isEmpty ? IndexKeys.firstValue : key, upper: nil, prefix: key)]
        }
    }
}

/// A validated query: its conditions grouped by index, and its order.
struct QueryPlan: Sendable {
    struct Constraint: Sendable {
        let index: TypeSchema.Index
        var conditions: [CompiledCondition]
    }

    let constraints: [Constraint]
    let sortIndex: TypeSchema.Index?
    let isDescending: Bool

    /// Validates `filters` and `sort` against the type's declaration.
    ///
    /// - Throws: `unknownIndex` for an index the type does not declare; `invalidQuery` for a value of
    ///   the wrong kind, NaN, or a prefix on a number index.
    init(filters: [StorageIndexFilter], sort: StorageIndexSort?, schema: TypeSchema) throws(LocalStorageError) {
        var constraints: [Constraint] = []
        for filter in filters {
            guard let index = schema.index(named: filter.indexName) else {
                throw .unknownIndex(filter.indexName)
            }
            let condition = try QueryPlan.compile(filter.condition, on: index)
            if let position = constraints.firstIndex(where: { $0.index.name == index.name }) {
                constraints[position].conditions.append(condition)
            } else {
                constraints.append(Constraint(index: index, conditions: [condition]))
            }
        }
        self.constraints = constraints
        if let sort {
            guard let index = schema.index(named: sort.indexName) else { throw .unknownIndex(sort.indexName) }
            sortIndex = index
        } else {
            sortIndex = nil
        }
        isDescending = sort?.isDescending ?? false
    }

    private static func compile(_ condition: StorageIndexFilter.Condition,
                                on index: TypeSchema.Index) throws(LocalStorageError) -> CompiledCondition {
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
            points.sort { $0.key.lexicographicallyPrecedes($1.key) }
            var unique: [QueryBound] = []
            for point in points where unique.last?.key != point.key { unique.append(point) }
            return CompiledCondition(test: .points(unique))
        case .atLeast(let value):
            return CompiledCondition(test: .range(lower: try bound(value), lowerInclusive: true, upper: nil,
                                                  upperInclusive: false))
        case .greaterThan(let value):
            return CompiledCondition(test: .range(lower: try bound(value), lowerInclusive: false, upper: nil,
                                                  upperInclusive: false))
        case .atMost(let value):
            return CompiledCondition(test: .range(lower: nil, lowerInclusive: false, upper: try bound(value),
                                                  upperInclusive: true))
        case .lessThan(let value):
            return CompiledCondition(test: .range(lower: nil, lowerInclusive: false, upper: try bound(value),
                                                  upperInclusive: false))
        case .between(let low, let high):
            return CompiledCondition(test: .range(lower: try bound(low), lowerInclusive: true,
                                                  upper: try bound(high), upperInclusive: true))
        case .hasPrefix(let prefix):
            guard index.kind == .string else {
                throw .invalidQuery("hasPrefix needs a string index; \"\(index.name)\" holds numbers")
            }
            let encoded = OrderedKey.encodePrefix(prefix)
            return CompiledCondition(test: .prefix(key: encoded.bytes, value: Array(prefix.utf8),
                                                   keyIsCut: encoded.isTruncated))
        }
    }
}

extension IndexValue {
    var kindName: String {
        switch self {
        case .string: "a string"
        case .number: "a number"
        }
    }
}
