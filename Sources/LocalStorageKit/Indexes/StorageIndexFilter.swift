/// One condition on a declared index; a query ANDs all of its conditions.
///
/// ```swift
/// let filters: [StorageIndexFilter] = [
///     .equals("category", "electronics"),
///     .atLeast("rating", 4.5),
///     .between("price", 100.0...500.0),
///     .hasPrefix("sku", "TECH_"),
/// ]
/// ```
/// Values are a `String` or any ``StorageIndexNumber``; numbers compare by numeric value whatever
/// their type (an `Int` bound on a `Double` index works). String ranges compare in UTF-8 byte order.
/// A record without a value for the index never matches. Several conditions on one index intersect.
public struct StorageIndexFilter: Sendable, Hashable {
    enum Condition: Sendable, Hashable {
        case equals(IndexValue)
        case atLeast(IndexValue)
        case atMost(IndexValue)
        case greaterThan(IndexValue)
        case lessThan(IndexValue)
        case between(IndexValue, IndexValue)
        case oneOf([IndexValue])
        case hasPrefix(String)
    }

    /// The index the condition is on.
    public let indexName: String
    let condition: Condition

    init(_ indexName: String, _ condition: Condition) {
        self.indexName = indexName
        self.condition = condition
    }

    // MARK: Equality and membership

    /// Records whose value equals `value`.
    public static func equals(_ name: String, _ value: String) -> StorageIndexFilter {
        StorageIndexFilter(name, .equals(.string(value)))
    }

    /// Records whose value equals `value` numerically.
    public static func equals<N: StorageIndexNumber>(_ name: String, _ value: N) -> StorageIndexFilter {
        StorageIndexFilter(name, .equals(.number(value.storageNumber.value)))
    }

    /// Records whose value is one of `values`.
    public static func oneOf(_ name: String, _ values: [String]) -> StorageIndexFilter {
        StorageIndexFilter(name, .oneOf(values.map(IndexValue.string)))
    }

    /// Records whose value is numerically one of `values`.
    public static func oneOf<N: StorageIndexNumber>(_ name: String, _ values: [N]) -> StorageIndexFilter {
        StorageIndexFilter(name, .oneOf(values.map { .number($0.storageNumber.value) }))
    }

    // MARK: Ranges

    /// Records whose value is ≥ `value`.
    public static func atLeast(_ name: String, _ value: String) -> StorageIndexFilter {
        StorageIndexFilter(name, .atLeast(.string(value)))
    }

    /// Records whose value is ≥ `value`.
    public static func atLeast<N: StorageIndexNumber>(_ name: String, _ value: N) -> StorageIndexFilter {
        StorageIndexFilter(name, .atLeast(.number(value.storageNumber.value)))
    }

    /// Records whose value is ≤ `value`.
    public static func atMost(_ name: String, _ value: String) -> StorageIndexFilter {
        StorageIndexFilter(name, .atMost(.string(value)))
    }

    /// Records whose value is ≤ `value`.
    public static func atMost<N: StorageIndexNumber>(_ name: String, _ value: N) -> StorageIndexFilter {
        StorageIndexFilter(name, .atMost(.number(value.storageNumber.value)))
    }

    /// Records whose value is > `value`.
    public static func greaterThan(_ name: String, _ value: String) -> StorageIndexFilter {
        StorageIndexFilter(name, .greaterThan(.string(value)))
    }

    /// Records whose value is > `value`.
    public static func greaterThan<N: StorageIndexNumber>(_ name: String, _ value: N) -> StorageIndexFilter {
        StorageIndexFilter(name, .greaterThan(.number(value.storageNumber.value)))
    }

    /// Records whose value is < `value`.
    public static func lessThan(_ name: String, _ value: String) -> StorageIndexFilter {
        StorageIndexFilter(name, .lessThan(.string(value)))
    }

    /// Records whose value is < `value`.
    public static func lessThan<N: StorageIndexNumber>(_ name: String, _ value: N) -> StorageIndexFilter {
        StorageIndexFilter(name, .lessThan(.number(value.storageNumber.value)))
    }

    /// Records whose value lies in `range` (both ends included).
    public static func between(_ name: String, _ range: ClosedRange<String>) -> StorageIndexFilter {
        StorageIndexFilter(name, .between(.string(range.lowerBound), .string(range.upperBound)))
    }

    /// Records whose value lies numerically in `range` (both ends included).
    public static func between<N: StorageIndexNumber & Comparable>(
        _ name: String, _ range: ClosedRange<N>
    ) -> StorageIndexFilter {
        StorageIndexFilter(
            name,
            .between(
                .number(range.lowerBound.storageNumber.value),
                .number(range.upperBound.storageNumber.value)))
    }

    // MARK: Prefixes

    /// Records whose string value starts with `prefix` (UTF-8 bytes); an empty prefix matches every
    /// record that has a value.
    public static func hasPrefix(_ name: String, _ prefix: String) -> StorageIndexFilter {
        StorageIndexFilter(name, .hasPrefix(prefix))
    }

    /// Another name for ``hasPrefix(_:_:)``.
    public static func startsWith(_ name: String, _ prefix: String) -> StorageIndexFilter {
        hasPrefix(name, prefix)
    }
}

/// The order of a query's results, by one declared index.
///
/// Records without a value for the index come first ascending and last descending; ties break by id,
/// and descending is the exact reverse of ascending, so paging is stable.
public enum StorageIndexSort: Sendable, Hashable {
    /// Smallest value first.
    case ascending(String)
    /// Largest value first.
    case descending(String)

    /// The index the order is on.
    public var indexName: String {
        switch self {
        case .ascending(let name), .descending(let name): name
        }
    }

    var isDescending: Bool {
        if case .descending = self { return true }
        return false
    }
}
