// Many records in one call: `fetch(_:ids:)` (one snapshot, like Redis's MGET) and
// `delete(_:matching:)` (invalidation by an indexed field, in one commit).

extension LocalStorage {
    /// The live records among `ids`, read from one snapshot and keyed by id; absent and expired ids are
    /// left out.
    ///
    /// ```swift
    /// let some = try await storage.fetch(Product.self, ids: ["sku_1", "sku_2"])   // [Product.ID: Product]
    /// ```
    /// Complexity: one lookup per id in one read transaction: cheaper than one ``fetch(_:id:)-(_,String)``
    /// per id. With a ``LocalStorageConfiguration/memoryCache``, the values it holds come from memory (as
    /// current as that snapshot) and the others it keeps.
    ///
    /// The store keys records by their ids' UTF-8 bytes, while a Swift `String` key compares by canonical
    /// equivalence: of two records whose ids differ only in Unicode normalization ("café" composed and
    /// decomposed), asked for together, the dictionary holds the one asked for last under the first id.
    /// Fetch such ids one at a time to tell them apart.
    /// - Throws: `invalidId` for an id that cannot key a record; `decodingFailed`; `migrationFailed`.
    nonisolated(nonsending) public func fetch<T: LocalStorable>(_ type: T.Type, ids: [T.ID]) async throws -> [T.ID: T] {
        try await operation("fetch(ids:)") {
            let schema = try await core.schema(for: T.self)
            return try await tiers.fetch(T.self, ids: ids, schema: schema)
        }
    }

    /// Deletes every live record of `T` the filters match, in one commit when it fits, and returns how many.
    ///
    /// ```swift
    /// let gone = try await storage.delete(Product.self, matching: [.equals("category", "books")])
    /// ```
    /// The way cache tags invalidate: every record with an indexed value goes at once. No filters (`[]`)
    /// match every record of the type, as in ``fetch(_:matching:orderedBy:options:)``. Change streams get
    /// a `.deleted(id:)` for each record; loads of those ids under way lose to the delete. With a shared
    /// tier, the query runs on the server, then the records it found are deleted there in one script and here
    /// in one commit: a matching record another instance saves between the two is not deleted.
    ///
    /// One commit rewrites every page the deleted records are on, and LMDB reuses none of the pages a commit
    /// frees in that commit: a delete spread over the store (every other record) takes about as many new pages
    /// as the store holds, so the data file may grow by that much (later writes reuse the pages; compaction gives
    /// them back). When that does not fit in ``LocalStorageConfiguration/maxMapSize`` (or on the disk), a store
    /// without a shared tier deletes the records in parts instead, each a commit of its own that runs the query
    /// again (change streams get each part's `.deleted(id:)` as it commits; a matching record saved meanwhile is
    /// deleted too), rather than failing with `storageFull`. An error in a later part leaves the earlier parts
    /// deleted, and so does cancelling the task, which stops it between parts with `CancellationError`. With a
    /// shared tier the local commit stays one, and throws `storageFull` when it does not fit.
    /// Complexity: the query's walk, plus one delete per record matched.
    /// - Throws: `unknownIndex` or `invalidQuery` for a filter the type's indexes cannot answer; `storageFull`
    ///   when not even one record's delete fits.
    @discardableResult
    nonisolated(nonsending) public func delete<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter]
    ) async throws -> Int {
        // A cancellation between parts comes out as Swift's `CancellationError`, not wrapped.
        try await operationPassingCallerErrors("delete(matching:)") {
            let schema = try await core.schema(for: T.self)
            return try await tiers.delete(T.self, matching: filters, schema: schema) {
                try await local.migrateIfPending(T.self, schema: schema)
                do {
                    return try await core.writer.performOnce { context in
                        let transaction = StorageWriteTransaction(storage: self, context: context)
                        defer { transaction.close() }
                        return try transaction.delete(T.self, matching: filters)
                    }
                } catch LocalStorageError.storageFull {
                    return try await deleteInParts(T.self, matching: filters)
                }
            }
        }
    }

    /// Deletes what ``delete(_:matching:)`` matches in several commits, when one does not fit: a delete spread
    /// over a store rewrites about every page it touches, and LMDB reuses none of the pages a commit frees in
    /// that commit, so one commit needs about as many new pages as the store holds. Parts start at 5,000
    /// records, halve when one does not fit either and double (up to 10,000) after one that did (``PartSize``, as
    /// `purgeExpired()`'s batches do); each part is a commit of its own, which change streams get
    /// as such, and runs the query again at its snapshot (stopping after the part's records). Ends when nothing
    /// more matches, or when a part found only index entries whose records are gone (a damaged store's, which
    /// `localstorage verify --repair` removes); throws `storageFull` only when a part of one record does not
    /// fit, leaving the parts before it deleted.
    private nonisolated(nonsending) func deleteInParts<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter]
    ) async throws -> Int {
        var total = 0
        var size = PartSize(largest: 10_000)
        _ = size.shrink()  // 5,000 to start with: the one commit of them all did not fit.
        while true {
            try Task.checkCancellation()
            let part = size.current
            let outcome: (deleted: Int, more: Bool)
            do {
                outcome = try await core.writer.performOnce { context in
                    let transaction = StorageWriteTransaction(storage: self, context: context)
                    defer { transaction.close() }
                    return try transaction.delete(T.self, matching: filters, atMost: part)
                }
            } catch LocalStorageError.storageFull where size.shrink() {
                continue
            }
            total += outcome.deleted
            guard outcome.more, outcome.deleted > 0 else { return total }
            size.grow()
        }
    }
}

extension LocalRepository {
    /// The live records among `ids`, from one snapshot, keyed by id (see ``LocalStorage/fetch(_:ids:)``).
    nonisolated(nonsending) public func fetch(ids: [T.ID]) async throws -> [T.ID: T] {
        try await storage.fetch(T.self, ids: ids)
    }

    /// Deletes every live record the filters match, in one commit when it fits; returns how many (see
    /// ``LocalStorage/delete(_:matching:)``).
    @discardableResult
    nonisolated(nonsending) public func delete(matching filters: [StorageIndexFilter]) async throws -> Int {
        try await storage.delete(T.self, matching: filters)
    }
}
