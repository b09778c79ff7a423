extension LocalStorage {
    /// Runs `body` in one write transaction, atomically across records and types, and returns its result
    /// once the transaction is durable.
    ///
    /// ```swift
    /// let left = try await storage.write { tx in
    ///     guard var stock = try tx.fetch(Stock.self, id: "sku_1") else { throw ShopError.soldOut }
    ///     stock.count -= 1
    ///     try tx.save(stock)
    ///     return stock.count
    /// }
    /// ```
    /// The body is synchronous and runs on the store's writer thread, exactly once: a failing request
    /// committed in the same group commit never makes it run again. It sees its own writes. When it throws,
    /// nothing it did is written and its own error comes out unchanged. When its writes do not fit in
    /// `maxMapSize`, it fails with `storageFull` (or the error it threw on meeting the full map) and is not run
    /// again in the map's reserve, which only deletes outside a transaction, purges and evictions may use. The
    /// one exception to "once" is a store that maps less than `maxMapSize` (iOS and its relatives, a
    /// `maxMapSize` above 64 GiB, or a process without the address space): when the
    /// body's writes (or the commit that holds them) need that map to grow, it grows and the body runs again on
    /// a fresh transaction (nothing of the first run is kept), whatever it did with the `storageFull` it met.
    /// Keep bodies short: other writes wait for them. Change streams get the transaction's events after it commits, in order, and
    /// a live query reruns once for the whole transaction.
    /// - Throws: Whatever `body` throws, unchanged; `storageFull` when its writes do not fit.
    nonisolated(nonsending) public func write<R: Sendable>(
        _ body: @escaping @Sendable (StorageWriteTransaction) throws -> R
    ) async throws
        -> R
    {
        try await operationPassingCallerErrors("write") {
            try tiers.checkTransaction(writes: true)
            let run = WriteBodyRun()
            return try await core.writer.performOnce { context in
                try run.begin(in: context)
                let transaction = StorageWriteTransaction(storage: self, context: context)
                defer { transaction.close() }
                do {
                    return try body(transaction)
                } catch {
                    run.threw(CallerError(underlying: error))
                    throw CallerError(underlying: error)
                }
            }
        }
    }

    /// Runs `body` on one consistent snapshot of the store: however many writes commit meanwhile, every
    /// read in it sees the same state.
    ///
    /// ```swift
    /// let (user, posts) = try await storage.read { tx in
    ///     (try tx.fetch(User.self, id: "u1"), try tx.fetch(Post.self, matching: [.equals("author", "u1")]))
    /// }
    /// ```
    /// The body runs on the caller's executor, synchronously. It may run again, on a new snapshot, when a
    /// type it reads must first be registered, migrated or re-indexed (the first use of a type in this
    /// process, or after its index declaration changed), so keep it free of side effects.
    /// - Throws: Whatever `body` throws, unchanged; `sharedTierUnavailable` on a store with a shared tier, whose
    ///   records a snapshot of this instance's near cache does not all hold (use the store's own reads there).
    nonisolated(nonsending) public func read<R>(_ body: (StorageReadTransaction) throws -> R) async throws -> R {
        try await operationPassingCallerErrors("read") {
            try tiers.checkTransaction(writes: false)
            var attempt = 0
            while true {
                let now = core.clock.wallNanoseconds()
                var outcome: Result<R, any Error>?
                // Noted before the snapshot begins: the types registered by then are the ones it can read.
                let schemaGeneration = core.schemaGeneration
                let transaction = try core.environment.read { txn in
                    let transaction = StorageReadTransaction(
                        storage: self, txn: txn, now: now, schemaGeneration: schemaGeneration,
                        mayPrepare: attempt < 3)
                    defer { transaction.close() }
                    do {
                        outcome = .success(try body(transaction))
                    } catch {
                        outcome = .failure(error)
                    }
                    return transaction
                }
                if !transaction.preparation.isEmpty {
                    // Only migrations and re-indexes count: registering types the body reads (one round each at a
                    // type's first use) used up the rounds, and an indexed read then ran on stale entries.
                    if transaction.preparesIndexes { attempt += 1 }
                    for step in transaction.preparation { try await step() }
                    continue
                }
                for afterRead in transaction.afterReads { afterRead() }
                switch outcome {
                case .success(let value)?: return value
                case .failure(let error)?: throw CallerError(underlying: error)
                case nil: throw LocalStorageError.storageError(code: -1, message: "the read ran no body")
                }
            }
        }
    }
}

extension LocalStorage {
    /// Why `write { }` throws on a store with a shared tier: its body runs inside a local transaction, which
    /// cannot wait for the server.
    static let writeTransactionsNotShared = SharedTierRecordStore.writeTransactionsNotShared

    /// Why `read { }` throws on a store with a shared tier: its snapshot is this instance's near cache.
    static let readTransactionsNotShared = SharedTierRecordStore.readTransactionsNotShared
}

extension LocalRepository {
    /// Runs `body` in one write transaction (see ``LocalStorage/write(_:)``).
    nonisolated(nonsending) public func write<R: Sendable>(
        _ body: @escaping @Sendable (StorageWriteTransaction) throws -> R
    ) async throws
        -> R
    {
        try await storage.write(body)
    }

    /// Runs `body` on one consistent snapshot (see ``LocalStorage/read(_:)``).
    nonisolated(nonsending) public func read<R>(_ body: (StorageReadTransaction) throws -> R) async throws -> R {
        try await storage.read(body)
    }
}

/// What the first run of a `write { }` body came to, for the writer's replay of its request after it needed
/// room (the writer replays only a body that met the end of the map, or whose commit did): the body runs again
/// only on a fresh transaction in a map that grew (a store that maps less than `maxMapSize`). In the map's
/// reserve at `maxMapSize`, or in a map that did not grow, it does not run again: the request fails with the
/// error the body threw, or `storageFull`. Touched on the writer thread only.
final class WriteBodyRun: @unchecked Sendable {
    private var ran = false
    private var thrown: (any Error)?

    /// Notes a run of the body in `context`; throws instead when that would run it a second time where it may
    /// not.
    func begin(in context: CommitQueue.Context) throws {
        if ran {
            // A store that maps less than `maxMapSize` grew its map for the body, whose writes met its end (what
            // the body saw as `storageFull`, caught or not, was that): the documented second run. The writer
            // says so (`mapGrewForReplay`); a map larger than at the first run does not: a commit that reclaims
            // freed pages at `maxMapSize` may take a page past the old end (review-84 #1).
            guard context.mapGrewForReplay else {
                throw thrown ?? LocalStorageError.storageFull
            }
        }
        ran = true
        thrown = nil
    }

    /// Notes the error the body threw.
    func threw(_ error: any Error) {
        thrown = error
    }
}
