import Foundation

/// Keeps every limit in the commit that passes one (docs/DESIGN.md, "A bounded cache"). Runs on the
/// writer thread, inside the transaction, after the requests and before the change log is written.
///
/// In each scope over its limit (a type with its own limits that this commit wrote, then the whole store)
/// it evicts, one record at a time until the scope fits: expired records first (soonest expired first),
/// then the policy's victims among records this commit did not write, then this commit's own. Evicting is
/// deleting: the entries, the count tree and the change log stay exact, and observers see `.deleted(id:)`.
final class Evictor {
    let book: LimitBook
    let notes: AccessNotes
    let evictions: EvictionTally
    /// Where a damaged type left out of a store limit's scope is reported.
    let logger: (any StorageLogger)?
    private var schemas: [UInt32: TypeSchema] = [:]
    /// The `next.type` value the schema cache was filled at.
    private var schemasMarker: [UInt8]?
    /// The schemas of the transaction under way.
    private var contextSchemas: (context: CommitQueue.Context, schemas: [UInt32: TypeSchema])?
    /// The adaptive policy's integers as the last commit that kept them left them.
    private var carriedIntegers: MetaIntegers.Carried?

    init(book: LimitBook, notes: AccessNotes, evictions: EvictionTally, logger: (any StorageLogger)?) {
        self.book = book
        self.notes = notes
        self.evictions = evictions
        self.logger = logger
    }

    /// Folds pending recency and evicts what the limits call for.
    func enforce(_ context: CommitQueue.Context) throws {
        guard !book.isEmpty else { return }
        let written = context.logged
        let unchecked = book.uncheckedLimits
        let checksStore = unchecked.store && book.store != nil
        let wroteRecords =
            written.contains { $0.kind == .inserted || $0.kind == .updated } || !context.resizedTypes.isEmpty
            || !context.filled.isEmpty || !unchecked.types.isEmpty || checksStore
        let recency = book.policy == .leastRecentlyUsed || book.policy == .adaptive
        if !wroteRecords && (!recency || notes.isEmpty) && !written.contains(where: { $0.kind != .touched }) {
            return
        }
        let access = try AccessIndex.open(context.txn)
        let adaptive = try adaptiveState(context)
        if recency { try fold(written, access: access, adaptive: adaptive, context: context) }
        if wroteRecords {
            try keepLimits(written, unchecked: unchecked.types, access: access, adaptive: adaptive, context: context)
            if !unchecked.types.isEmpty || unchecked.store {
                let book = self.book
                context.onCommit { book.checked(types: unchecked.types, store: unchecked.store) }
            }
        }
        if let adaptive {
            try adaptive.flush()
            let carried = adaptive.carry()
            context.onCommit { [weak self] in self?.carriedIntegers = carried }
        }
    }

    /// Keeps each limit a scope this commit wrote to is under (or one no commit of this process kept yet): its
    /// types' own, then the store's.
    private func keepLimits(
        _ written: [ChangeLog.Pending], unchecked: Set<UInt32>, access: AccessIndex, adaptive: AdaptiveEviction?,
        context: CommitQueue.Context
    ) throws {
        var excluded: [UInt32: Set<[UInt8]>] = [:]
        for change in written where change.kind == .inserted || change.kind == .updated {
            excluded[change.type, default: []].insert(change.id)
        }
        // Types whose payloads a migration write-back resized: their limits are kept too (nothing of theirs is
        // this commit's own save, so nothing is spared).
        for type in context.resizedTypes.union(unchecked) where excluded[type] == nil { excluded[type] = [] }
        // Records a shared tier filled: kept like this commit's saves.
        for (type, keys) in context.filled { excluded[type, default: []].formUnion(keys) }
        for type in excluded.keys.sorted() {
            guard let limits = book.limits(ofType: type), let schema = try schema(type, context: context) else {
                continue
            }
            try keep(
                limits, in: [schema], storeWide: false, excluded: excluded, access: access, adaptive: adaptive,
                context: context)
        }
        if let limits = book.store {
            let scope = try allSchemas(context).sorted { $0.key < $1.key }.map(\.value)
            try keep(
                limits, in: scope, storeWide: true, excluded: excluded, access: access, adaptive: adaptive,
                context: context)
        }
    }

    /// Refuses a record that alone exceeds its type's or the store's `maxBytes`: no eviction could make it
    /// fit, so it is not written and nothing is evicted for it. `size` is the payload as stored (compressed,
    /// sealed), which is what the limits count.
    ///
    /// - Throws: ``LocalStorageError/recordTooLarge(id:size:limit:)`` with the smaller limit it exceeds.
    static func refuseOversized(
        _ id: String, size: Int, schema: TypeSchema, storeMaxBytes: Int?
    ) throws(LocalStorageError) {
        if let limit = byteLimit(of: schema, storeMaxBytes: storeMaxBytes), size > limit {
            throw LocalStorageError.recordTooLarge(id: id, size: size, limit: limit)
        }
    }

    /// The most payload bytes one record of `schema` may have: the smaller of its type's and the store's
    /// `maxBytes`, nil when neither is set.
    static func byteLimit(of schema: TypeSchema, storeMaxBytes: Int?) -> Int? {
        // Asked for every record written: no array made for two optionals.
        switch (schema.limits?.maxBytes, storeMaxBytes) {
        case (let type?, let store?): min(type, store)
        case (let type?, nil): type
        case (nil, let store): store
        }
    }

    /// The adaptive policy's state for this transaction, or nil under another policy.
    private func adaptiveState(_ context: CommitQueue.Context) throws -> AdaptiveEviction? {
        guard book.policy == .adaptive else { return nil }
        guard let meta = try context.txn.openDatabase(TypeRegistry.metaName, create: false) else {
            throw LMDBError.notFound("mdb_dbi_open")
        }
        return try AdaptiveEviction(
            txn: context.txn, meta: meta, capacity: book.largestRecordLimit ?? 16_384, carried: carriedIntegers,
            records: { [unowned self] type in try self.schema(type, context: context)?.records })
    }

    // MARK: - Recency

    /// Gives each record read since the last commit, then each record this commit wrote, the next clock
    /// value (so this commit's records are the most recent), and drops the recency of deleted records.
    private func fold(
        _ written: [ChangeLog.Pending], access: AccessIndex, adaptive: AdaptiveEviction?, context: CommitQueue.Context
    ) throws {
        let txn = context.txn
        // LRU's clock, read at its first tick (the adaptive policy keeps its own, in AdaptiveQueues).
        var clock: UInt64?
        func tick() throws -> UInt64 {
            let next = try (clock ?? access.clock(txn)) &+ 1
            clock = next
            return next
        }
        // A commit in the map's reserve leaves them for a later one: its writes may not grow the store.
        let taken = context.inReserve ? [] : notes.take()
        // A transaction that does not commit (a full map, a peer that threw) leaves them for the next one.
        if !taken.isEmpty { context.onAbort { [notes] in notes.giveBack(taken) } }
        // A record read several times since the last fold is placed once (review-94 #2: a hot record read 4,096
        // times was moved 4,096 times). Least recently used: at its last read, which is where the reads before would
        // have left it. Adaptive: a run of reads of one record in a row, its sketch still counting each; reads of
        // other records between two of its reads change where the queues leave it, so those stay apart (the
        // policy's reference model takes every read in order).
        var placed = 0
        func exists(_ type: UInt32, _ key: [UInt8]) throws -> Bool {
            guard book.tracksRecency(ofType: type), let schema = try schema(type, context: context) else {
                return false
            }
            return try txn.get(schema.records, key: key) != nil
        }
        if let adaptive {
            var start = 0
            while start < taken.count {
                let (type, key) = taken[start]
                var end = start + 1
                while end < taken.count, taken[end].type == type, taken[end].key == key { end += 1 }
                if try exists(type, key) {
                    placed += 1
                    try adaptive.use(type: type, key: key, as: .read, times: end - start)
                }
                start = end
            }
        } else {
            var lastRead: [NotedRead: Int] = [:]
            lastRead.reserveCapacity(taken.count)
            for (index, note) in taken.enumerated() { lastRead[NotedRead(type: note.type, key: note.key)] = index }
            for (index, (type, key)) in taken.enumerated() where lastRead[NotedRead(type: type, key: key)] == index {
                guard try exists(type, key) else { continue }
                placed += 1
                try access.set(type: type, key: key, clock: try tick(), txn: txn)
            }
        }
        evictions.folded(reads: taken.count, placed: placed)
        for change in written {
            switch change.kind {
            case .inserted, .updated:
                guard book.tracksRecency(ofType: change.type) else { continue }
                if let adaptive {
                    try adaptive.use(
                        type: change.type, key: change.id, as: change.kind == .inserted ? .insert : .update)
                    continue
                }
                try access.set(type: change.type, key: change.id, clock: try tick(), txn: txn)
            case .deleted, .expired:
                if change.recordStays { continue }
                try adaptive?.forget(type: change.type, key: change.id)
                try access.remove(type: change.type, key: change.id, txn: txn)
            case .cleared:
                try adaptive?.forgetAll(type: change.type)
                try access.removeAll(type: change.type, txn: txn)
            case .touched:
                continue
            }
        }
        if let clock { try access.setClock(clock, txn) }
    }

    // MARK: - Keeping a limit

    private func keep(
        _ limits: StorageLimits, in scope: [TypeSchema], storeWide: Bool, excluded: [UInt32: Set<[UInt8]>],
        access: AccessIndex, adaptive: AdaptiveEviction?, context: CommitQueue.Context
    ) throws {
        let txn = context.txn
        var records = 0
        var bytes = 0
        for schema in scope {
            records += try txn.entryCount(schema.records)
            if limits.maxBytes != nil { bytes += try payloadBytes(schema, txn) }
        }
        func isOver() -> Bool {
            if let maxRecords = limits.maxRecords, records > maxRecords { return true }
            if let maxBytes = limits.maxBytes, bytes > maxBytes { return true }
            return false
        }
        // Entries whose record is gone (a damaged file, an older version's leftover) are dropped as they are met;
        // past as many as the store has records, something else is wrong.
        var dangling = 0
        var evicted: [ExactName: Int] = [:]
        // The adaptive ghost lists are the store's: they are bounded by what the whole store holds, counted once
        // for a type's own scope.
        var storeHeld: Int?
        // One run's walks past the records this commit wrote (see ``ClockOrderedWalk/Marks``), and whether the
        // scope was found to hold no other record to evict: a run only removes records, so it never will again.
        let marks = ClockOrderedWalk.Marks()
        var ownOnly = false
        while isOver() {
            if adaptive != nil, !storeWide, storeHeld == nil {
                storeHeld = try allSchemas(context).values.reduce(0) { $0 + (try txn.entryCount($1.records)) }
            }
            guard
                let (schema, key) = try victim(
                    in: scope, excluded: excluded, access: access, adaptive: adaptive, total: records,
                    ghostsHeld: storeWide ? records : storeHeld, now: context.now, marks: marks, ownOnly: &ownOnly,
                    context: context)
            else {
                throw LocalStorageError.decodingFailed(
                    reason: "the store is over its limits (\(limits)) but holds no record to evict; "
                        + "its counters are damaged (localstorage verify)")
            }
            guard let stored = try txn.get(schema.records, key: key) else {
                // Deleting it would find nothing, and the same entry would be the next victim, forever.
                dangling += 1
                guard dangling <= records + 1 else {
                    throw LocalStorageError.decodingFailed(
                        reason: "the store is over its limits (\(limits)) and its eviction order names records "
                            + "it does not hold; its entries are damaged (localstorage verify --repair)")
                }
                try RecordWriter.removeEntriesOfDamagedRecord(key: key, schema: schema, txn: txn)
                try access.remove(type: schema.number, key: key, txn: txn)
                try adaptive?.forget(type: schema.number, key: key)
                continue
            }
            let size = RecordWriter.payloadSize(of: stored)
            try RecordWriter.delete(
                id: String(decoding: key, as: UTF8.self), key: key, schema: schema,
                context: context, keepsLease: true)
            try access.remove(type: schema.number, key: key, txn: txn)
            try adaptive?.forget(type: schema.number, key: key)
            evicted[ExactName(schema.name), default: 0] += 1
            records -= 1
            bytes -= size
        }
        evictions.walked(marks.passed)
        if !evicted.isEmpty {
            // Counted when the commit lands: a transaction that fails (a full map, its replay) evicted nothing.
            let tally = evictions
            context.onCommit { for (name, count) in evicted { tally.add(name.name, count) } }
        }
        try adaptive?.settle(scope, total: records)
    }

    // MARK: - Schemas

    private func payloadBytes(_ schema: TypeSchema, _ txn: Transaction) throws -> Int {
        try CountTree.payloadBytes(schema: schema, txn: txn) ?? CountTree.walkedPayloadBytes(schema: schema, txn: txn)
    }

    private func schema(_ type: UInt32, context: CommitQueue.Context) throws -> TypeSchema? {
        try allSchemas(context)[type]
    }

    /// Every type of the store by number; reloaded when a type was registered since. Handles opened in a
    /// transaction are kept only once it commits (LMDB closes them when it aborts).
    private func allSchemas(_ context: CommitQueue.Context) throws -> [UInt32: TypeSchema] {
        if let current = contextSchemas, current.context === context { return current.schemas }
        let txn = context.txn
        guard let meta = try txn.openDatabase(TypeRegistry.metaName, create: false) else { return [:] }
        let marker = try txn.get(meta, key: TypeRegistry.nextTypeKey).map(Array.init)
        var opened = schemas
        if marker != schemasMarker || schemas.isEmpty {
            opened = [:]
            let infos = try TypeRegistry.all(meta: meta, txn: txn).infos
            for schema in try TypeSchema.openUndamaged(infos, in: txn, logger: logger) {
                opened[schema.number] = schema
            }
            context.onCommit { [weak self] in
                self?.schemas = opened
                self?.schemasMarker = marker
            }
        }
        contextSchemas = (context, opened)
        return opened
    }
}

/// A read noted for eviction: a record of a type, by its key.
private struct NotedRead: Hashable {
    let type: UInt32
    let key: [UInt8]
}
