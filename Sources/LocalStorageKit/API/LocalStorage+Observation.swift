extension LocalStorage {
    // MARK: - Change streams

    /// Every change committed to records of `T` from now on, in commit order.
    ///
    /// The stream is live as soon as this call returns: a save that starts after it is delivered.
    /// `save(contentsOf:)` gives one event per record, ``deleteAll(_:)`` one ``StorageChange/cleared``,
    /// and every purge of expired records (``purgeExpired()``, a purge on read, the background sweep)
    /// one ``StorageChange/expired(id:)`` per record.
    ///
    /// ```swift
    /// for await change in storage.changes(of: TaskItem.self) {
    ///     switch change {
    ///     case .inserted(let task): print("Created task: \(task.title)")
    ///     case .updated(let task): print("Updated task: \(task.title)")
    ///     case .deleted(let id): print("Deleted task ID: \(id)")
    ///     case .expired(let id): print("Task expired ID: \(id)")
    ///     case .cleared: print("All tasks cleared from cache")
    ///     }
    /// }
    /// ```
    ///
    /// **Buffering.** The writer never waits for a consumer: events go into the stream's buffer,
    /// which keeps the newest ``LocalStorageConfiguration/changeStreamBufferSize`` events and drops
    /// older ones when a consumer falls that far behind (the logger gets one warning per stream).
    /// Memory therefore stays bounded even for a consumer that never reads. A consumer that must not
    /// miss anything should read promptly, or observe a result with ``updates(of:matching:orderedBy:options:)``
    /// instead, which always converges on the current result.
    ///
    /// Change streams describe writes by every process on the store: another process's writes (the CLI,
    /// an app extension) arrive through the store's change log as soon as they reach the data file (an
    /// inotify watch on Linux), at the latest within about
    /// ``LocalStorageConfiguration/externalChangePollInterval``, with values read from the store when the
    /// entries are read: the entries one read finds give each record once, with its latest state (writes to
    /// one deleted before that are left out and its `.deleted(id:)` comes).
    ///
    /// Leaving the `for await` loop, cancelling its task, or dropping the stream ends the stream and
    /// removes its observer. While the stream is active it keeps the store open.
    public func changes<T: LocalStorable>(of type: T.Type) -> AsyncStream<StorageChange<T>> {
        core.changeStream(
            of: T.self, capacity: max(1, configuration.changeStreamBufferSize),
            backlog: max(1, configuration.changeStreamBufferSize, configuration.changeLogRetention), logger: logger,
            keepingOpen: self)
    }

    /// The records of `T` that match a query: the current result first, then a new result after each
    /// burst of committed writes to the type.
    ///
    /// `storage.updates(of: Post.self)` observes every record in `options.sort` order;
    /// `matching` and `orderedBy` narrow and order the result as in
    /// ``fetch(_:matching:orderedBy:options:)``. The query runs inside the store each time.
    ///
    /// ```swift
    /// for try await admins in storage.updates(of: User.self, matching: [.equals("role", "admin")]) {
    ///     self.admins = admins
    /// }
    /// ```
    ///
    /// - **Coalescing.** The first commit that touches `T` after a quiet window (no rerun for a write within
    ///   the window; the initial result does not count) reruns the query at once;
    ///   while commits keep coming it reruns at most once per
    ///   ``LocalStorageConfiguration/liveQueryCoalescing`` window, never once per record. A change to a
    ///   record that meets `matching` neither before nor after does not rerun it.
    /// - **No repeats.** A rerun whose rows have the same ids, order and record versions (update times)
    ///   as the last result emitted emits nothing; nothing is encoded to tell (`T` need not be `Equatable`).
    /// - **Slow consumers.** The stream keeps only the newest result: a consumer that falls behind
    ///   skips straight to the current one.
    /// - **Other processes.** While any live query or change stream is active, the store reads the
    ///   change log as soon as the data file is written (an inotify watch on Linux) and every
    ///   ``LocalStorageConfiguration/externalChangePollInterval`` for the changes other processes (the CLI,
    ///   another app) committed, and reruns the live queries of those types.
    /// - **Ending.** Leaving the `for try await` loop or cancelling its task ends the stream and frees
    ///   its observer. While the stream is active it keeps the store open.
    ///
    /// A record whose time to live runs out leaves the result when it expires: the query reruns then,
    /// with no write needed.
    ///
    /// - Throws: through the stream, and ending it: whatever the query throws, such as
    ///   `unknownIndex`, `invalidQuery` or `decodingFailed`. With a shared tier, a rerun that cannot reach it (or
    ///   has not heard from it for `maxStaleness`) keeps the last result and reruns once the instance has reconnected
    ///   and caught up; the first result, and a rerun the server refuses, throw `sharedTierUnavailable`.
    public func updates<T: LocalStorable>(
        of type: T.Type, matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
        options: FetchOptions = FetchOptions()
    ) -> AsyncThrowingStream<[T], Error> {
        liveQuery(of: T.self, matching: filters) { storage in
            try await storage.fetch(T.self, matching: filters, orderedBy: sort, options: options)
        }
    }

    /// Runs `query` now and again after each burst of commits to `T`, emitting changed results.
    ///
    /// The stream keeps only the newest result a consumer has not read yet; tests pass `.unbounded` to see
    /// every emission.
    ///
    /// With `filters`, a committed change whose record meets them neither before nor after does not rerun
    /// the query. After each run a timer is armed for the soonest expiry among the type's records.
    func liveQuery<T: LocalStorable>(
        of type: T.Type, matching filters: [StorageIndexFilter] = [],
        buffering: AsyncThrowingStream<[T], Error>.Continuation.BufferingPolicy = .bufferingNewest(1),
        _ query: @escaping @Sendable (LocalStorage) async throws -> [T]
    ) -> AsyncThrowingStream<[T], Error> {
        var recovering: (@Sendable (LocalStorageError) async -> Bool)?
        if let tier = sharedTier {
            recovering = { await tier.awaitServable(after: $0) }
        }
        return core.liveQuery(
            of: T.self, matching: filters, coalescing: configuration.liveQueryCoalescing,
            firstDesign: configuration.liveQueriesUseTheFirstDesign, buffering: buffering, recovering: recovering
        ) { [self] in
            try await query(self)
        }
    }
}
