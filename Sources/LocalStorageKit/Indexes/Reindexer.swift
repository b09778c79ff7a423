/// What a re-index could not do: how many stale records it left as they were (logged: damaged, newer, or
/// not decodable as the type), and the first of them with its reason, for the error of a query that would
/// otherwise miss them (``SchemaRuntime/reindexFirst(at:mayRetry:)``).
struct ReindexOutcome {
    var failed = 0
    /// Why the first record left could not be re-indexed: the error an indexed read throws.
    var firstProblem: LocalStorageError?

    /// Adds a batch's failures; the first problem stays the first.
    mutating func add(failed: Int, firstProblem: LocalStorageError?) {
        self.failed += failed
        self.firstProblem = self.firstProblem ?? firstProblem
    }
}

/// Brings the records of a type that were indexed with another declaration in line with this one, in
/// bounded write batches.
///
/// In a store of layout 4 or older, the signature database (`s.<type#>`) lists every record under the signature
/// of the declaration it was indexed with, so the stale records are found without reading the others. From
/// layout 5 on, the count tree counts the records of each declaration instead (18 bytes and a B-tree insert
/// fewer per record): the counters say whether any record is stale and how many, and a re-index finds them by
/// walking the records' headers in id order, stopping once it has met them all. Each is decoded once,
/// its index values recomputed, its header rewritten and its entries moved: out of every index it may
/// be in (see ``RecordWriter/removeEntries(of:key:schema:txn:)``), into this declaration's. Nothing is
/// dropped: indexes this declaration no longer has simply empty as their records move, and keep their
/// numbers, because another declaration of the type (another app version, another process) may still
/// hold their handles and write to them.
struct Reindexer<T: LocalStorable>: Sendable {
    let logger: (any StorageLogger)?
    static var batchSize: Int { 1000 }

    /// Whether `txn`'s snapshot holds records of the type indexed with another declaration than
    /// `schema`'s. O(log n): the first and last keys of the signature database, or the type's declaration
    /// counters.
    static func hasStaleRecords(schema: TypeSchema, txn: Transaction) throws -> Bool {
        if schema.countsDeclarations { return try CountTree.hasRecordsOfOtherDeclarations(schema: schema, txn: txn) }
        let mine = schema.signatureKey
        return try txn.withCursor(schema.signatures) { cursor in
            guard let first = try cursor.move(.first) else { return false }
            guard first.key.elementsEqual(mine) else { return true }
            guard let last = try cursor.move(.last) else { return false }
            return !last.key.elementsEqual(mine)
        }
    }

    /// Re-indexes every stale record; returns what it could not re-index, which stays as it was.
    @discardableResult
    func run(schema: TypeSchema, writer: CommitQueue) throws -> ReindexOutcome {
        logger?.log(
            level: .notice, message: "Re-indexing \(schema.name) for its current index declaration",
            metadata: ["type": schema.name])
        var after: (signature: [UInt8], key: [UInt8])?
        var visited = 0
        var rewritten = 0
        var outcome = ReindexOutcome()
        while true {
            let batch = try writer.transact { context in
                try reindexBatch(schema: schema, after: after, context: context)
            }
            visited += batch.seen
            rewritten += batch.changed
            outcome.add(failed: batch.failed, firstProblem: batch.firstProblem)
            after = batch.last
            if batch.finished { break }
        }
        logger?.log(
            level: .info, message: "Re-indexed \(rewritten) of \(visited) records of \(schema.name)",
            metadata: ["type": schema.name, "failed": "\(outcome.failed)"])
        return outcome
    }

    /// Re-indexes every stale record inside `context`'s transaction (a write transaction's query); returns what
    /// it could not re-index.
    func reindexAll(schema: TypeSchema, context: CommitQueue.Context) throws -> ReindexOutcome {
        var after: (signature: [UInt8], key: [UInt8])?
        var outcome = ReindexOutcome()
        while true {
            let batch = try reindexBatch(schema: schema, after: after, context: context)
            outcome.add(failed: batch.failed, firstProblem: batch.firstProblem)
            after = batch.last
            if batch.finished { return outcome }
        }
    }

    private struct Batch {
        var seen = 0
        var changed = 0
        var failed = 0
        var firstProblem: LocalStorageError?
        var last: (signature: [UInt8], key: [UInt8])?
        /// Whether the walk reached the end: no stale record is left after `last`.
        var finished = false
    }

    private func reindexBatch(
        schema: TypeSchema, after: (signature: [UInt8], key: [UInt8])?,
        context: CommitQueue.Context
    ) throws -> Batch {
        if schema.countsDeclarations {
            return try reindexBatchByWalking(schema: schema, after: after?.key, context: context)
        }
        let txn = context.txn
        let mine = schema.signatureKey
        var stale: [(signature: [UInt8], key: [UInt8])] = []
        try txn.withCursor(schema.signatures) { cursor in
            var entry: Cursor.Entry?
            if let after {
                entry = try cursor.seek(atLeast: after.signature, value: after.key)
                if let current = entry, current.key.elementsEqual(after.signature),
                    current.value.elementsEqual(after.key)
                {
                    entry = try cursor.move(.next)
                }
            } else {
                entry = try cursor.move(.first)
            }
            while let current = entry, stale.count < Reindexer.batchSize {
                if current.key.elementsEqual(mine) {
                    entry = try cursor.move(.nextKey)
                    continue
                }
                stale.append((Array(current.key), Array(current.value)))
                entry = try cursor.move(.next)
            }
        }
        var batch = Batch(seen: stale.count, last: stale.last, finished: stale.count < Reindexer.batchSize)
        for (signature, key) in stale {
            guard let bytes = try txn.get(schema.records, key: key) else {
                // An entry without its record: remove it.
                try txn.delete(schema.signatures, key: signature, value: key)
                continue
            }
            try attempt(key: key, schema: schema, batch: &batch) {
                let view = try RecordView(bytes)
                if !view.isExpired(at: context.now) {
                    let indexedWith = try view.signature(in: schema, txn: txn)
                    if !RecordWriter.signatureKey(indexedWith).elementsEqual(signature) {
                        // The entry disagrees with the header: the header wins.
                        try txn.delete(schema.signatures, key: signature, value: key)
                        try txn.put(schema.signatures, key: RecordWriter.signatureKey(indexedWith), value: key)
                        if indexedWith == schema.signature { return false }
                    }
                }
                return try reindex(view, key: key, schema: schema, context: context)
            }
        }
        return batch
    }

    /// A batch of a store that counts declarations (layout 5): re-indexes up to ``batchSize`` records whose headers
    /// name another declaration. When the counters add up to the type's records and one batch holds the stale ones,
    /// they are looked for from the newest update time back (``staleByRecency(schema:counted:txn:)``); otherwise the
    /// records after `after` are walked in id order, a walk from the first record stopping once it has met as many
    /// as trusted counters count. A walk that went through every record sets the counters from what it tallied.
    private func reindexBatchByWalking(
        schema: TypeSchema, after: [UInt8]?, context: CommitQueue.Context
    ) throws -> Batch {
        let txn = context.txn
        let counters = try CountTree.declarationCounts(schema: schema, txn: txn)
        let counted = counters.reduce(0) { $1.signature == schema.signature ? $0 : $0 + $1.count }
        // The counters are trusted to stop the walk early only when they add up to the type's records (with those
        // the last full walk could not count): one too low would stop it before a stale record, which queries would
        // then miss.
        let uncounted = try CountTree.uncountedRecords(schema: schema, txn: txn)
        let addsUp = counters.reduce(0) { $0 + $1.count } + uncounted == (try txn.entryCount(schema.records))
        let stopsEarly = after == nil && counted > 0 && addsUp
        var stale: [(key: [UInt8], signature: UInt64)] = []
        // What the headers say, for a walk that goes through every record: the counters are set from it.
        var tally: [UInt64: Int] = [:]
        var reachedEnd = false
        // Records another declaration wrote since this one last re-indexed are the newest: when the counters can be
        // trusted and one batch holds them all, they are looked for from the newest update time back (a query after
        // another process saved a few records reads a few headers, not the type's).
        if stopsEarly, counted <= Reindexer.batchSize, try keepsUpdateOrder(schema, context: context),
            let recent = try staleByRecency(schema: schema, counted: counted, txn: txn)
        {
            stale = recent
        } else {
            try txn.withCursor(schema.records) { cursor in
                var entry: Cursor.Entry?
                if let after {
                    entry = try cursor.seek(atLeast: after)
                    if let current = entry, current.key.elementsEqual(after) { entry = try cursor.move(.next) }
                } else {
                    entry = try cursor.move(.first)
                }
                while let current = entry {
                    if stale.count == Reindexer.batchSize || (stopsEarly && stale.count == counted) { return }
                    schema.runtime.reindexHeadersRead.add(1, ordering: .relaxed)
                    if let signature = try CountTree.countedSignature(of: current.value, schema: schema, txn: txn) {
                        tally[signature, default: 0] += 1
                        if signature != schema.signature { stale.append((Array(current.key), signature)) }
                    }
                    entry = try cursor.move(.next)
                }
                reachedEnd = true
            }
        }
        let last = stale.last.map { (signature: [UInt8](), key: $0.key) }
        // Done when the batch has room left, or when it met every record the trusted counters count.
        let finished = stale.count < Reindexer.batchSize || (stopsEarly && stale.count == counted)
        var batch = Batch(seen: stale.count, last: last, finished: finished)
        for (key, signature) in stale {
            // Read again: a rewrite before it may have moved the page the walk saw it on.
            guard let bytes = try txn.get(schema.records, key: key) else { continue }
            let rewritten = try attempt(key: key, schema: schema, batch: &batch) {
                try reindex(try RecordView(bytes), key: key, schema: schema, context: context)
            }
            // Re-indexed, it counts under this declaration; purged (expired), under none; left, where it was.
            if let rewritten {
                tally[signature, default: 0] -= 1
                if rewritten { tally[schema.signature, default: 0] += 1 }
            }
        }
        // A walk of every record sets the counters from what the headers say (a counter too high, or counters
        // that did not add up, are put right; a walk that stopped early leaves them, as they agreed).
        if after == nil, reachedEnd {
            try CountTree.setDeclarationCounts(tally, schema: schema, txn: txn)
        }
        return batch
    }

    /// Whether the type keeps its update order (``UpdateOrder``), built now if it kept none (a type two declarations
    /// write at once: the next re-index finds the other's few new records from it); building it reads every header
    /// once, counted as the re-index's.
    private func keepsUpdateOrder(_ schema: TypeSchema, context: CommitQueue.Context) throws -> Bool {
        if try schema.keepsUpdateOrder(context.txn) { return true }
        guard try UpdateOrder.keep(schema, context: context) else { return false }
        schema.runtime.reindexHeadersRead.add(try context.txn.entryCount(schema.records), ordering: .relaxed)
        return true
    }

    /// The `counted` records indexed with another declaration, found by walking the update-time entries from the
    /// newest back and reading each record's header; nil when the walk ends before it met them all (an entry
    /// missing, or stale records older than `4 × counted + batchSize` others): the caller walks the records instead.
    private func staleByRecency(
        schema: TypeSchema, counted: Int, txn: Transaction
    ) throws -> [(key: [UInt8], signature: UInt64)]? {
        var stale: [(key: [UInt8], signature: UInt64)] = []
        var met: Set<[UInt8]> = []
        // Stale records older than most are better found by walking the records: the walk gives up after a bound.
        var budget = 4 * counted + Reindexer.batchSize
        let found = try txn.withCursor(schema.updated) { cursor in
            var entry = try cursor.move(.last)
            while let current = entry, budget > 0 {
                budget -= 1
                let key = Array(current.value)
                schema.runtime.reindexHeadersRead.add(1, ordering: .relaxed)
                if let bytes = try txn.get(schema.records, key: key),
                    let signature = try CountTree.countedSignature(of: bytes, schema: schema, txn: txn),
                    signature != schema.signature, met.insert(key).inserted
                {
                    stale.append((key, signature))
                    if stale.count == counted { return true }
                }
                entry = try cursor.move(.previous)
            }
            return false
        }
        // Re-indexed in id order, as a walk of the records would.
        return found ? stale.sorted { $0.key.lexicographicallyPrecedes($1.key) } : nil
    }

    /// Runs `body`, the re-index of the record under `key`, counting a record it changed (`body` returns true)
    /// or could not re-index (it throws anything but LMDB's errors, which end the batch). Returns what `body`
    /// returned, or nil when it could not re-index the record.
    @discardableResult
    private func attempt(
        key: [UInt8], schema: TypeSchema, batch: inout Batch, _ body: () throws -> Bool
    ) throws -> Bool? {
        do {
            let changed = try body()
            if changed { batch.changed += 1 }
            return changed
        } catch let error as LMDBError {
            throw error
        } catch {
            let id = String(decoding: key, as: UTF8.self)
            batch.failed += 1
            if batch.firstProblem == nil {
                batch.firstProblem = Reindexer.problem(type: schema.name, id: id, error: error)
            }
            logger?.log(
                level: .warning, message: "Could not re-index a record; it is left as it was",
                metadata: ["type": schema.name, "id": id, "error": "\(error)"])
            return nil
        }
    }

    /// Re-indexes the stale record `view` under `key` for `schema`'s declaration; purges it instead when it has
    /// expired. Returns whether it rewrote the record.
    private func reindex(
        _ view: RecordView, key: [UInt8], schema: TypeSchema, context: CommitQueue.Context
    ) throws -> Bool {
        let txn = context.txn
        if view.isExpired(at: context.now) {
            // Invisible to every read: purged, not decoded (one the declaration cannot decode made every
            // indexed read of the type throw until the sweep came).
            try RecordWriter.purge(keys: [key], schema: schema, context: context, logger: logger)
            return false
        }
        guard view.version <= schema.version else {
            throw LocalStorageError.decodingFailed(
                reason: "stored at version \(view.version), newer than \(schema.version)")
        }
        let value = try RecordDecoding.decode(
            T.self, view: view, id: String(decoding: key, as: UTF8.self),
            session: DecodeSession(
                counter: nil, format: view.format, sealing: schema.sealing, indexing: schema.runtime))
        var header = try view.header(in: schema, txn: txn)
        header.indexValues = value.indexValues(in: schema)
        header.signature = schema.signature
        try RecordWriter.replaceHeader(of: view, with: header, key: key, schema: schema, txn: txn)
        return true
    }

    /// Why an indexed query of `type` cannot answer while the record `id` stays unindexed for its declaration: a
    /// migration's failure as it is (`migrationFailed`, as any other read of the record throws), anything else
    /// as `decodingFailed` saying so.
    static func problem(type: String, id: String, error: any Error) -> LocalStorageError {
        let reason: String
        switch error {
        case LocalStorageError.migrationFailed:
            return LocalStorageError.wrapping(error)
        case LocalStorageError.decodingFailed(let text):
            reason = text
        default:
            reason = "\(error)"
        }
        return .decodingFailed(
            reason: "\(type) \"\(id)\" could not be re-indexed for this app's index declaration (\(reason)); "
                + "indexed queries of \(type) cannot answer without it until it is readable here or deleted")
    }
}
