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

    /// Deletes every live record of `T` the filters match, in one commit, and returns how many.
    ///
    /// ```swift
    /// let gone = try await storage.delete(Product.self, matching: [.equals("category", "books")])
    /// ```
    /// The way cache tags invalidate: every record with an indexed value goes at once. No filters (`[]`)
    /// match every record of the type, as in ``fetch(_:matching:orderedBy:options:)``. Change streams get
    /// a `.deleted(id:)` for each record; loads of those ids under way lose to the delete. With a shared
    /// tier, the query runs on the server, then the records it found are deleted there in one script and here
    /// in one commit: a matching record another instance saves between the two is not deleted.
    /// Complexity: the query's walk, plus one delete per record matched.
    /// - Throws: `unknownIndex` or `invalidQuery` for a filter the type's indexes cannot answer.
    @discardableResult
    nonisolated(nonsending) public func delete<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter]
    ) async throws -> Int {
        try await operation("delete(matching:)") {
            let schema = try await core.schema(for: T.self)
            return try await tiers.delete(T.self, matching: filters, schema: schema) {
                try await local.migrateIfPending(T.self, schema: schema)
                return try await core.writer.performOnce { context in
                    let transaction = StorageWriteTransaction(storage: self, context: context)
                    defer { transaction.close() }
                    return try transaction.delete(T.self, matching: filters)
                }
            }
        }
    }
}

extension LocalRepository {
    /// The live records among `ids`, from one snapshot, keyed by id (see ``LocalStorage/fetch(_:ids:)``).
    nonisolated(nonsending) public func fetch(ids: [T.ID]) async throws -> [T.ID: T] {
        try await storage.fetch(T.self, ids: ids)
    }

    /// Deletes every live record the filters match in one commit; returns how many (see
    /// ``LocalStorage/delete(_:matching:)``).
    @discardableResult
    nonisolated(nonsending) public func delete(matching filters: [StorageIndexFilter]) async throws -> Int {
        try await storage.delete(T.self, matching: filters)
    }
}
