extension LocalStorage {
    /// Runs an indexed read in one snapshot, after re-indexing the records of `T` that another declaration
    /// of the type indexed (an older or newer app version, or another process's type of the same name).
    ///
    /// The check is O(log n) and runs inside the same snapshot as `body`, so a record another process
    /// wrote with another declaration just before is re-indexed too. After a re-index that left records it
    /// could not re-index (logged), queries on the same snapshot run without trying again.
    nonisolated(nonsending) func readIndexed<T: LocalStorable, R>(
        _ type: T.Type, schema: TypeSchema,
        _ body: (Transaction) throws -> R
    ) async throws -> R {
        var attempts = 0
        while true {
            let outcome: IndexedRead<R> = try core.environment.read { txn in
                if attempts < 3, schema.runtime.reindexedAt.load(ordering: .relaxed) != txn.id,
                    try Reindexer<T>.hasStaleRecords(schema: schema, txn: txn)
                {
                    return .stale
                }
                return .done(try body(txn))
            }
            switch outcome {
            case .done(let result):
                return result
            case .stale:
                attempts += 1
                try await reindex(T.self, schema: schema)
            }
        }
    }

    /// Re-indexes the stale records of `T` on the writer thread.
    func reindex<T: LocalStorable>(_ type: T.Type, schema: TypeSchema) async throws {
        let reindexer = Reindexer<T>(logger: core.logger)
        let environment = core.environment
        try await core.writer.performExclusive { writer in
            if try reindexer.run(schema: schema, writer: writer) > 0 {
                schema.runtime.reindexedAt.store(environment.lastTransactionID, ordering: .relaxed)
            }
        }
    }
}

private enum IndexedRead<R> {
    case stale
    case done(R)
}
