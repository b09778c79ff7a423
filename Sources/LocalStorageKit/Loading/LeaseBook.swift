import Synchronization

/// The `leases` database: one entry per (type number, id) that is being loaded through the cache, whose
/// last load found nothing, or whose last load a write ended (see ``LeaseEntry``). No read of records ever looks here, so an absent
/// marker is no record for counts, queries, metadata, exports or statistics.
///
/// Key: type number (UInt32 big-endian) ‖ the id's UTF-8 (``TypedKey``). Every commit voids the entries of the ids it
/// inserts, updates or deletes (and of every id of a type it clears), in its own transaction: a write
/// wins over a load under way, whose result is then not stored.
final class LeaseBook: Sendable {
    static let name = "leases"

    let database: Database
    /// Where ``sweep(now:txn:)`` goes on from: the key after the last entry it looked at (nil: the first).
    private let sweepPosition = Mutex<[UInt8]?>(nil)

    init(database: Database) { self.database = database }

    /// How many entries ``sweep(now:txn:)`` looks at per call: more than the one entry each call's commit adds.
    static let sweepStep = 16
    /// How long an entry is kept after its deadline (a remembered nil of a load without `absentFor` ends as it
    /// is written, and the callers other processes have waiting on that load still read it).
    static let sweepGrace: Int64 = 60_000_000_000

    /// Removes the entries among the next ``sweepStep`` (in key order, going on from where the last call
    /// stopped, and wrapping) whose deadline passed more than ``sweepGrace`` ago: remembered nils (of a load
    /// without `absentFor` above all, one per id a loader did not find) and the leases of loads that never
    /// finished would otherwise stay for good, outside every limit. Each call that adds an entry makes one.
    func sweep(now: LeaseMoment, txn: Transaction) throws {
        let start = sweepPosition.withLock { $0 }
        let cutoff = now.earlier(by: LeaseBook.sweepGrace)
        var ended: [[UInt8]] = []
        var next: [UInt8]?
        try txn.withCursor(database) { cursor in
            var entry = try start.map { try cursor.seek(atLeast: $0) } ?? cursor.move(.first)
            var looked = 0
            while let current = entry, looked < LeaseBook.sweepStep {
                looked += 1
                if let lease = LeaseEntry(current.value), lease.ended(before: cutoff) {
                    ended.append(Array(current.key))
                }
                entry = try cursor.move(.next)
            }
            next = entry.map { Array($0.key) }
        }
        for key in ended { try txn.delete(database, key: key) }
        sweepPosition.withLock { $0 = next }
    }

    /// Removes up to `limit` entries (of the type numbered `type`, or of every type) whose deadline passed more
    /// than ``sweepGrace`` ago, and the leases whose holder is known to be gone (a process on this host that
    /// ended mid-load, whatever its `loadTimeout`), as ``sweep(now:txn:)`` does a few at a time: what
    /// `purgeExpired` does, batch by batch, for the leases and remembered nils a store that stopped loading would
    /// otherwise keep. Returns how many; nothing when the store has no `leases` database.
    @discardableResult
    static func removeEnded(now: LeaseMoment, type: UInt32? = nil, limit: Int, txn: Transaction) throws -> Int {
        guard let database = try txn.openDatabase(name, create: false) else { return 0 }
        let cutoff = now.earlier(by: sweepGrace)
        return try LeaseBook(database: database).remove(type: type, limit: limit, txn: txn) { _, value in
            LeaseEntry(value).map { $0.ended(before: cutoff) || ($0.kind == .lease && $0.owner.isGone) } ?? false
        }
    }

    /// Opens (creating) the database in a write transaction, or opens it if it exists in a read one.
    static func open(in txn: Transaction) throws -> LeaseBook? {
        try txn.openDatabase(name, create: !txn.isReadOnly).map(LeaseBook.init)
    }

    static func key(type: UInt32, id: [UInt8]) -> [UInt8] { TypedKey.make(type: type, id: id) }

    /// The entry of `key`, or nil when there is none (or none this version can read).
    func entry(_ key: [UInt8], txn: Transaction) throws -> LeaseEntry? {
        try txn.get(database, key: key).flatMap { LeaseEntry($0) }
    }

    func put(_ entry: LeaseEntry, key: [UInt8], txn: Transaction) throws {
        try txn.put(database, key: key, value: entry.bytes)
    }

    func remove(_ key: [UInt8], txn: Transaction) throws {
        try txn.delete(database, key: key)
    }

    /// Voids the entries of the ids a commit writes: an insert, update or delete of an id voids its lease (the
    /// load's result will not be stored) or its remembered nil; clearing a type voids all of the type's.
    /// Expiry, new expirations and evictions (the store making room: a load of the evicted id is newer than
    /// what was evicted) leave them alone. Costs nothing while no entry exists.
    ///
    /// A voided lease becomes a marker that has already ended when it is written, under the lease's token, which
    /// answers only the callers of other processes waiting on that load: after a delete or clear a nil, what the
    /// store holds after the write, where without it they would find no record and no lease and load again
    /// (trial86 #1); after an insert or update a ``LeaseEntry/Kind/written`` mark: they find the record, or load
    /// again when it was evicted or expired since (review-107 A4), and a delete later in the same commit turns it
    /// into the nil (review-86 #10), as a write that leaves a record after a delete turns the nil into the mark
    /// (review-109 #1; a shared-tier delete that a fill's newer copy outlived, `recordStays`, leaves the record). A
    /// remembered nil still in force goes.
    ///
    /// An entry the same commit put after a change (`sparing`: its key → the number of changes logged before
    /// it) is left alone by that change: a delete of an expired record, or a clear of its type, followed in
    /// one group commit by a load's lease, came before the load and does not void it.
    func void(
        _ changes: [ChangeLog.Pending], now: LeaseMoment, txn: Transaction, sparing: [[UInt8]: Int] = [:]
    ) throws {
        guard !changes.isEmpty, try txn.entryCount(database) > 0 else { return }
        for (position, change) in changes.enumerated() {
            switch change.kind {
            case .deleted where change.keepsLease:
                continue  // The store made room (the load of the id goes on), or a refresh remembers a nil.
            case .inserted, .updated, .deleted:
                let key = LeaseBook.key(type: change.type, id: change.id)
                if let put = sparing[key], put > position { continue }
                // A delete a fill's newer copy outlived (the shared tier) leaves the record.
                let leavesRecord = change.kind != .deleted || change.recordStays
                _ = try void(key, now: now, txn: txn, leavesRecord: leavesRecord)
            case .cleared:
                var voided: [([UInt8], LeaseEntry?)] = []
                try forEach(type: change.type, txn: txn) { key, value in
                    if (sparing[key] ?? 0) <= position { voided.append((key, LeaseEntry(value))) }
                    return true
                }
                for (key, entry) in voided {
                    if let entry {
                        try void(entry, key: key, now: now, txn: txn, leavesRecord: false)
                    } else {
                        try txn.delete(database, key: key)
                    }
                }
            case .expired, .touched:
                continue
            }
        }
    }

    /// Voids the entry on `key`, if any, for a write of its id, as ``void(_:now:txn:sparing:)`` does (`leavesRecord`:
    /// the write leaves a record of the id, a delete none); returns whether there was a lease to void (whose waiters
    /// must be woken when no record changed).
    func void(_ key: [UInt8], now: LeaseMoment, txn: Transaction, leavesRecord: Bool) throws -> Bool {
        guard let entry = try entry(key, txn: txn) else { return false }
        try void(entry, key: key, now: now, txn: txn, leavesRecord: leavesRecord)
        return entry.kind == .lease
    }

    /// Voids `entry` on `key` for a write of its id (see ``void(_:now:txn:sparing:)``): a lease becomes an ended
    /// marker under its token, ``LeaseEntry/Kind/written`` when the write leaves a record (whose waiters read it, or
    /// load again when it is gone by then: review-107 A4) and a nil when it leaves none. An ended marker stays for
    /// the waiters of its load (one an earlier request of the same commit wrote, whose waiters would otherwise load
    /// again: review-86 #1), and follows the writes: the nil at a delete, the written mark at a write that leaves a
    /// record (review-109 #1: a delete and then a save left a nil over the record). A remembered nil still in force
    /// goes.
    private func void(
        _ entry: LeaseEntry, key: [UInt8], now: LeaseMoment, txn: Transaction, leavesRecord: Bool
    ) throws {
        switch entry.kind {
        case .absent:
            if entry.remembersAbsence(at: now) {
                try txn.delete(database, key: key)
            } else if leavesRecord {
                try put(entry.ended(as: .written, now: now), key: key, txn: txn)
            }
        case .written:
            if !leavesRecord { try put(entry.ended(as: .absent, now: now), key: key, txn: txn) }
        case .lease:
            try put(entry.ended(as: leavesRecord ? .written : .absent, now: now), key: key, txn: txn)
        }
    }

    /// Puts `entry` on `key` in the commit of `context`, noting it so that the changes the commit logged
    /// before it do not void it (see ``void(_:now:txn:sparing:)``).
    func put(_ entry: LeaseEntry, key: [UInt8], context: CommitQueue.Context) throws {
        try put(entry, key: key, txn: context.txn)
        context.leasesPut[key] = context.logged.count
    }

    /// Removes the entries of the type numbered `type` (nil: of every type) that `removing` picks by key and
    /// value, at most `limit` of them (the first in key order); returns how many.
    @discardableResult
    private func remove(
        type: UInt32?, limit: Int = .max, txn: Transaction,
        where removing: ([UInt8], UnsafeRawBufferPointer) -> Bool
    ) throws -> Int {
        var keys: [[UInt8]] = []
        try forEach(type: type, txn: txn) { key, value in
            if removing(key, value) { keys.append(key) }
            return keys.count < limit
        }
        for key in keys { try txn.delete(database, key: key) }
        return keys.count
    }

    /// Calls `body` with the key and value of each entry of the type numbered `type` (nil: of every type), in
    /// key order, until it returns false.
    private func forEach(
        type: UInt32?, txn: Transaction, _ body: ([UInt8], UnsafeRawBufferPointer) -> Bool
    ) throws {
        let prefix = type.map { LeaseBook.key(type: $0, id: []) } ?? []
        try txn.withCursor(database) { cursor in
            var entry = try cursor.seek(atLeast: prefix)
            while let current = entry, current.key.starts(with: prefix), body(Array(current.key), current.value) {
                entry = try cursor.move(.next)
            }
        }
    }
}
