/// Finding the next victim: the soonest expired record, else the policy's first among the records a commit did not
/// write, else the policy's first of the commit's own.
extension Evictor {
    /// The next record to evict from `scope`: the soonest expired, else the policy's first among records
    /// this commit did not write, else the policy's first of this commit's. `marks` and `ownOnly` carry what the
    /// run's earlier calls learnt: where the walks past this commit's records may start, and that no other record
    /// is left (set here once a look for one finds none).
    func victim(
        in scope: [TypeSchema], excluded: [UInt32: Set<[UInt8]>], access: AccessIndex,
        adaptive: AdaptiveEviction?, total: Int, ghostsHeld: Int?, now: Int64, marks: ClockOrderedWalk.Marks,
        ownOnly: inout Bool, context: CommitQueue.Context
    ) throws -> (TypeSchema, [UInt8])? {
        let txn = context.txn
        var best: (schema: TypeSchema, key: [UInt8], rank: Rank)?
        func consider(_ schema: TypeSchema, _ found: (key: [UInt8], rank: Rank)?) {
            guard let found else { return }
            if let current = best, current.rank <= found.rank { return }
            best = (schema, found.key, found.rank)
        }
        for schema in scope { consider(schema, try expiredHead(schema, now: now, txn: txn)) }
        if let best { return (best.schema, best.key) }
        for skipping in ownOnly ? [false] : [true, false] {
            if let adaptive,
                let found = try adaptive.victim(
                    in: scope, excluded: excluded, total: total, skipping: skipping,
                    ghostsHeld: ghostsHeld, marks: marks)
            {
                return found
            }
            for schema in scope {
                let mine = skipping ? excluded[schema.number] ?? [] : []
                consider(
                    schema,
                    try policyHead(
                        schema, skipping: mine, marks: skipping ? marks : nil, runMarks: marks, access: access,
                        adaptive: adaptive, context: context))
            }
            if let best { return (best.schema, best.key) }
            if skipping { ownOnly = true }
        }
        return nil
    }

    /// Victims compare by this: a group (records first ranked by the policy's index, then those the index
    /// misses), then the index's value.
    struct Rank: Comparable {
        let group: Int
        let value: UInt64

        static func < (a: Rank, b: Rank) -> Bool { (a.group, a.value) < (b.group, b.value) }
    }

    private func expiredHead(_ schema: TypeSchema, now: Int64, txn: Transaction) throws -> ([UInt8], Rank)? {
        var found: ([UInt8], Rank)?
        try RecordReader.forEachExpired(schema: schema, now: now, txn: txn) { time, key in
            found = (Array(key), Rank(group: 0, value: UInt64(bigEndian: time.loadUnaligned(as: UInt64.self))))
            return false
        }
        return found
    }

    private func policyHead(
        _ schema: TypeSchema, skipping: Set<[UInt8]>, marks: ClockOrderedWalk.Marks?, runMarks: ClockOrderedWalk.Marks,
        access: AccessIndex, adaptive: AdaptiveEviction?, context: CommitQueue.Context
    ) throws -> ([UInt8], Rank)? {
        let txn = context.txn
        switch book.policy {
        case .adaptive:
            // Records in no queue (written by a process without this limit): by update time.
            return try firstUpdated(
                schema, skipping: skipping, marks: marks, runMarks: runMarks, context: context, group: 2
            ) { key in
                try adaptive?.queues.queue(type: schema.number, key: key) == nil
            }
        case .leastRecentlyUsed:
            if let found = try access.oldest(
                type: schema.number, records: schema.records, skipping: skipping, marks: marks, txn: txn)
            {
                return (found.key, Rank(group: 1, value: found.clock))
            }
            // Records no tracking process has used since tracking began (written by a process without this
            // limit): by update time, after every tracked one.
            return try firstUpdated(
                schema, skipping: skipping, marks: marks, runMarks: runMarks, context: context, group: 2
            ) { key in
                try access.clock(type: schema.number, key: key, txn: txn) == nil
            }
        case .leastRecentlyUpdated:
            return try firstUpdated(
                schema, skipping: skipping, marks: marks, runMarks: runMarks, context: context, group: 1
            ) { _ in true }
        case .soonestExpiring:
            if let found = try firstEntry(
                schema.expiry, skipping: skipping, marks: marks, txn: txn, group: 1, { _ in true })
            {
                return found
            }
            return try firstUpdated(
                schema, skipping: skipping, marks: marks, runMarks: runMarks, context: context, group: 2
            ) { _ in true }
        }
    }

    /// The least recently updated record of `schema` that is not skipped and passes `accept`, by the type's update
    /// order (``UpdateOrder``), which the first eviction that looks here builds. In the map's reserve, where no order
    /// is built, by the type's headers, sorted once for the run (`runMarks`) and walked on from the first record still
    /// stored, so that a run of k victims costs one sort, not k.
    private func firstUpdated(
        _ schema: TypeSchema, skipping: Set<[UInt8]>, marks: ClockOrderedWalk.Marks?, runMarks: ClockOrderedWalk.Marks,
        context: CommitQueue.Context, group: Int, _ accept: ([UInt8]) throws -> Bool
    ) throws -> ([UInt8], Rank)? {
        let txn = context.txn
        if try UpdateOrder.keep(schema, context: context) {
            return try firstEntry(schema.updated, skipping: skipping, marks: marks, txn: txn, group: group, accept)
        }
        let sorted =
            try runMarks.sortedHeaders[schema.number]
            ?? (UpdateOrder.sortedPlaces(schema: schema, txn: txn), 0)
        var start = sorted.start
        defer { runMarks.sortedHeaders[schema.number] = (sorted.places, start) }
        var position = start
        while position < sorted.places.count {
            let (time, key) = sorted.places[position]
            position += 1
            guard try txn.get(schema.records, key: key) != nil else {
                // Gone for the rest of the run (it only removes records): later walks start past it.
                if position - 1 == start { start = position }
                continue
            }
            if !skipping.contains(key), try accept(key) { return (key, Rank(group: group, value: time)) }
            marks?.pass()
        }
        return nil
    }

    /// The first entry of a time-keyed database (8-byte big-endian time → record key) whose record is not
    /// skipped and passes `accept`.
    private func firstEntry(
        _ database: Database, skipping: Set<[UInt8]>, marks: ClockOrderedWalk.Marks?, txn: Transaction, group: Int,
        _ accept: ([UInt8]) throws -> Bool
    ) throws -> ([UInt8], Rank)? {
        try txn.withCursor(database) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry {
                let key = Array(current.value)
                if current.key.count == 8, !skipping.contains(key), try accept(key) {
                    return (
                        key, Rank(group: group, value: UInt64(bigEndian: current.key.loadUnaligned(as: UInt64.self)))
                    )
                }
                marks?.pass()
                entry = try cursor.move(.next)
            }
            return nil
        }
    }
}
