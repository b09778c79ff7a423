/// Limit, offset and order for a listing or a query.
///
/// ```swift
/// let recent = try await storage.fetch(Post.self, options: FetchOptions(limit: 20, sort: .newestFirst))
/// ```
public struct FetchOptions: Sendable, Hashable {
    /// The order of records when a query has no `orderedBy`.
    public enum Sort: Sendable, Hashable {
        /// By id, in UTF-8 byte order (the default).
        case id
        /// Most recently updated first.
        case newestFirst
        /// Least recently updated first.
        case oldestFirst
    }

    /// The most records to return; nil for all. A negative limit is an ``LocalStorageError/invalidQuery(_:)``.
    public var limit: Int?
    /// How many matching records to skip first.
    public var offset: Int
    /// The order when the query has no `orderedBy`.
    public var sort: Sort
    /// Deletes the expired records the read meets.
    public var purgeExpired: Bool

    /// Options with every argument defaulted: all records, by id.
    public init(limit: Int? = nil, offset: Int = 0, sort: Sort = .id, purgeExpired: Bool = false) {
        self.limit = limit
        self.offset = offset
        self.sort = sort
        self.purgeExpired = purgeExpired
    }

    /// Checks limit and offset.
    func validated() throws(LocalStorageError) -> FetchOptions {
        if let limit, limit < 0 { throw .invalidQuery("limit must not be negative (got \(limit))") }
        if offset < 0 { throw .invalidQuery("offset must not be negative (got \(offset))") }
        return self
    }

    /// The number of rows to collect before stopping: offset + limit, or unbounded.
    var end: Int {
        guard let limit else { return Int.max }
        let (sum, overflow) = offset.addingReportingOverflow(limit)
        return overflow ? Int.max : sum
    }
}
