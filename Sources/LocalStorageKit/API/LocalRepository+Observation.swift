extension LocalRepository {
    /// Every change committed to records of the type from now on, in commit order.
    ///
    /// The same stream as ``LocalStorage/changes(of:)``, buffering and all.
    ///
    /// ```swift
    /// for await change in storage.repository(TaskItem.self).changes() {
    ///     if case .deleted(let id) = change { print("Deleted task ID: \(id)") }
    /// }
    /// ```
    public func changes() -> AsyncStream<StorageChange<T>> {
        storage.changes(of: T.self)
    }

    /// The records that match a query: the current result first, then a new result after each burst
    /// of committed writes to the type.
    ///
    /// The same live query as ``LocalStorage/updates(of:matching:orderedBy:options:)``; `updates()`
    /// observes every record.
    ///
    /// ```swift
    /// for try await posts in storage.repository(Post.self).updates() {
    ///     self.posts = posts
    /// }
    /// ```
    /// - Throws: through the stream, and ending it: whatever the query throws.
    public func updates(
        matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
        options: FetchOptions = FetchOptions()
    ) -> AsyncThrowingStream<[T], Error> {
        storage.updates(of: T.self, matching: filters, orderedBy: sort, options: options)
    }
}
