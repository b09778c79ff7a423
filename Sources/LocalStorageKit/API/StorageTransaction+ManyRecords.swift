// Many records in one call inside a transaction: `fetch(_:ids:)` and `delete(_:matching:)`.

extension StorageReadTransaction {
    /// The live records among `ids`, keyed by id; absent and expired ids are left out (see
    /// ``LocalStorage/fetch(_:ids:)``).
    ///
    /// Complexity: one lookup per id, all in this transaction's snapshot.
    /// - Throws: `invalidId` for an id that cannot key a record; `decodingFailed`.
    public func fetch<T: LocalStorable>(_ type: T.Type, ids: [T.ID]) throws -> [T.ID: T] {
        try run {
            let schema = try schema(T.self)
            let session = storage.makeDecodeSession(for: schema)
            let (found, expired) = try RecordReader.getMany(
                T.self, ids: ids, schema: schema, now: now, txn: txn, session: session)
            try finish(session, expired: expired, purge: false, schema: schema)
            return found
        }
    }
}

extension StorageWriteTransaction {
    /// Deletes every live record of `T` the filters match; returns how many (see
    /// ``LocalStorage/delete(_:matching:)``). Change streams get a `.deleted(id:)` for each after the commit.
    ///
    /// Complexity: the query's walk, plus one delete per record matched (the count tree's counters change once
    /// for all of them).
    /// - Throws: `unknownIndex` or `invalidQuery` for a filter the type's indexes cannot answer.
    @discardableResult
    public func delete<T: LocalStorable>(_ type: T.Type, matching filters: [StorageIndexFilter]) throws -> Int {
        try run { try deleteMatching(T.self, filters, limit: .max).keys }
    }

    /// Deletes the first `limit` of the live records of `T` the filters match (in key order with no filters, else
    /// in the query's order); returns how many records it deleted (an index entry whose record is gone, which a
    /// damaged store may hold, is not one) and whether more match. The query stops after `limit + 1` matches.
    func delete<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], atMost limit: Int
    ) throws -> (deleted: Int, more: Bool) {
        try run {
            let outcome = try deleteMatching(T.self, filters, limit: limit)
            return (outcome.removed, outcome.more)
        }
    }

    /// The query of both deletes: deletes the first `limit` keys matched; returns how many keys, how many of them
    /// held a record, and whether more matched.
    private func deleteMatching<T: LocalStorable>(
        _ type: T.Type, _ filters: [StorageIndexFilter], limit: Int
    ) throws -> (keys: Int, removed: Int, more: Bool) {
        let schema = try schema(T.self)
        let plan = try QueryPlan(filters: filters, sort: nil, schema: schema)
        if QueryRunner.usesIndexes(plan) { try prepareIndexedRead(T.self, schema: schema) }
        let scan = limit < .max ? limit + 1 : .max
        var keys = try QueryRunner.matchingKeys(plan: plan, schema: schema, now: now, txn: txn, limit: scan)
        let more = keys.count > limit
        if more { keys.removeLast(keys.count - limit) }
        let removed = try atomically { context in
            try RecordWriter.deleteMany(keys: keys, schema: schema, context: context)
        }
        return (keys.count, removed, more)
    }
}

extension QueryRunner {
    /// The keys of every live record `plan` matches, in key order for a plain listing, else in the
    /// plan's order.
    static func matchingKeys(
        plan: QueryPlan, schema: TypeSchema, now: Int64, txn: Transaction, limit: Int = .max
    ) throws -> [[UInt8]] {
        guard plan.isUnconstrained else {
            var options = FetchOptions()
            if limit < .max { options.limit = limit }
            return try QueryExecutor(schema: schema, plan: plan, txn: txn, now: now).orderedIDs(options: options)
        }
        var keys: [[UInt8]] = []
        try txn.withCursor(schema.records) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry, keys.count < limit {
                let isLive: Bool
                do {
                    isLive = !(try RecordView(fixedPartOf: current.value)).isExpired(at: now)
                } catch {
                    isLive = true  // A damaged header counts as live: a delete with no condition removes it too.
                }
                if isLive { keys.append(Array(current.key)) }
                entry = try cursor.move(.next)
            }
        }
        return keys
    }
}
