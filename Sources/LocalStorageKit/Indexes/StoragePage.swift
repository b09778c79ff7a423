/// One page of a query's results, with the totals needed to page on.
public struct StoragePage<T: Sendable>: Sendable {
    /// The records on this page.
    public let items: [T]
    /// The page number, from 1.
    public let page: Int
    /// The largest number of items a page holds.
    public let pageSize: Int
    /// The number of records matching the query, over all pages.
    public let totalCount: Int

    /// The number of pages; 0 when nothing matches (or, for a page built by hand, when `pageSize` is below 1).
    public var totalPages: Int { totalCount <= 0 || pageSize <= 0 ? 0 : (totalCount - 1) / pageSize + 1 }
    /// Whether a later page has items.
    public var hasNextPage: Bool { page < totalPages }
    /// Whether an earlier page has items.
    public var hasPreviousPage: Bool { page > 1 && totalPages > 0 }

    /// A page of `items`.
    public init(items: [T], page: Int, pageSize: Int, totalCount: Int) {
        self.items = items
        self.page = page
        self.pageSize = pageSize
        self.totalCount = totalCount
    }
}

extension StoragePage: Equatable where T: Equatable {}
