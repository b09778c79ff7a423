/// Limit, offset and order for a listing or a query.
///
/// ```swift
/// let recent = try await storage.fetch(Post.self, options: FetchOptions(limit: 20, sort: .newestFirst))
/// ```
public struct FetchOptions: Sendable, Hashable {
    /// The order of records when a query has no `orderedBy`.
    public enum Sort: Sendable, Hashable {
        /// By id, in UTF-8 byte order of the id's text (the default): an integer or UUID id sorts as the
        /// string it is stored under, so `10` comes before `9` and `-5` before both. For a numeric order,
        /// declare the number as an index and use `orderedBy`.
        case id
        /// Most recently updated first; records updated in one commit (a batch) by id, descending.
        ///
        /// A type keeps the order of its update times on disk only once something walks it (most types never do, and
        /// it costs about 19 bytes a record): the first query of a type that walks it, through the store, answers by
        /// sorting every record's header and then builds the order in one commit; every write keeps it from then on,
        /// and later queries walk it and stop at `offset + limit`. A query that sorts a few matches of an index by
        /// their headers' times never needs it. Inside a ``StorageReadTransaction``, a read that needs it before it
        /// exists sorts the headers, in O(records), holding every id in memory at once (a store of 1,000,000 records:
        /// about 2 s and 100–200 MB at the peak), and the next query through the store builds it.
        case newestFirst
        /// Least recently updated first; records updated in one commit by id. As ``newestFirst``, the first query
        /// of a type sorted this way builds the order.
        case oldestFirst
    }

    /// Where a query runs when the store has a shared tier (``LocalStorageConfiguration/sharedTier``).
    public enum Scope: Sendable, Hashable {
        /// On this instance's own store, its near cache (the default without a shared tier).
        case local
        /// On the shared tier itself, over every instance's records: the same rows as the local query would
        /// give on the same data (the default with a shared tier). Without a shared tier it throws
        /// ``LocalStorageError/invalidQuery(_:)``.
        case shared
    }

    /// The most records to return; nil for all. A negative limit is an ``LocalStorageError/invalidQuery(_:)``.
    public var limit: Int?
    /// How many matching records to skip first.
    public var offset: Int
    /// The order when the query has no `orderedBy`.
    public var sort: Sort
    /// Deletes the expired records the read meets.
    public var purgeExpired: Bool
    /// Where the query runs: `.local`, on this instance's store, or `.shared`, on the shared tier. When it is
    /// not given, a store with a shared tier runs the query there (`.shared`) and any other store runs it
    /// locally; reading it then gives `.local`.
    public var scope: Scope {
        get { requestedScope ?? .local }
        set { requestedScope = newValue }
    }

    /// The scope the caller gave, or nil: `.shared` with a shared tier, else `.local`.
    private(set) var requestedScope: Scope?

    /// Options with every argument defaulted: all records, by id, on the shared tier when the store has one
    /// and on this instance's store otherwise.
    public init(
        limit: Int? = nil, offset: Int = 0, sort: Sort = .id, purgeExpired: Bool = false,
        scope: Scope? = nil
    ) {
        self.limit = limit
        self.offset = offset
        self.sort = sort
        self.purgeExpired = purgeExpired
        requestedScope = scope
    }

    /// Whether a store with a shared tier runs the query there: asked for, or `scope` not given.
    var runsOnSharedTier: Bool { requestedScope != .local }

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
