import CLMDB
import Foundation

/// The store's change log: every commit's changes (type number, record id, kind) under increasing
/// sequence numbers, written in the commit's own transaction, so that any process on the store can read
/// what changed after a position (``StorageChangeToken``), and follow other processes' writes.
///
/// Layout of the `changes` database: key = sequence, 8 bytes big-endian (from 1); value = the writing
/// process's mark (UInt64 LE), the type number (UInt32 LE), the kind (UInt8), then the id's UTF-8. Key 0
/// holds the highest sequence trimmed so far (UInt64 LE). The log keeps at least `retention` entries;
/// once it holds a tenth more (at least 1,000 more), a commit trims the oldest, at most 10,000 plus its own
/// count at a time, so trimming never holds a save up for long.
final class ChangeLog: Sendable {
    enum Kind: UInt8, Sendable {
        case inserted = 1
        case updated, deleted, expired, cleared
        /// A new expiration: live queries rerun, change streams stay silent.
        case touched
    }

    struct Entry {
        let sequence: UInt64
        let writer: UInt64
        let type: UInt32
        let kind: Kind
        let id: [UInt8]
    }

    /// What a commit logs for one change, before it has a sequence number.
    struct Pending: Sendable {
        let type: UInt32
        let kind: Kind
        let id: [UInt8]
        /// A delete that does not void the id's lease: an eviction (the store making room; a load of the id
        /// under way is newer than the record it evicted), or the delete of a refresh that found nothing,
        /// whose lease becomes the remembered nil.
        var keepsLease = false
        /// A delete announced for observers while the store still holds the record (a notice of the shared
        /// tier that a fill got ahead of): the eviction order keeps the record.
        var recordStays = false
    }

    static let name = "changes"
    private static let watermarkKey = [UInt8](repeating: 0, count: 8)

    /// The `meta` key of the store's identity: a random UInt64 (little-endian), written when the store is
    /// created (or first opened for writing by a version that keeps one), never changed afterwards.
    static let identityKey: [UInt8] = Array("store.id".utf8)

    let database: Database
    let retention: Int
    /// This process's mark on the entries it writes (random for each open environment).
    let writer: UInt64
    /// The store's identity (see ``identityKey``), carried by every ``StorageChangeToken``.
    let store: UInt64
    /// The load-through leases each commit voids for the ids it writes (nil: none kept).
    let leases: LeaseBook?

    init(database: Database, retention: Int, store: UInt64, leases: LeaseBook? = nil) {
        self.database = database
        self.retention = max(1, retention)
        self.store = store
        self.leases = leases
        writer = UInt64.random(in: 1...UInt64.max)
    }

    /// Why an open refuses a store whose identity in `meta` is `stored` (nil: none yet), or nil.
    static func identityRefusal(_ stored: [UInt8]?) -> String? {
        guard let stored, stored.count != 8 else { return nil }
        return "the store's identity in meta is damaged (\(stored.count) bytes, expected 8)"
    }

    /// The store's identity from `meta`, created there when it has none (in a write transaction).
    ///
    /// - Throws: `decodingFailed` when the stored identity is damaged (not 8 bytes).
    static func identity(meta: Database, txn: Transaction) throws -> UInt64 {
        if let stored = try txn.get(meta, key: identityKey) {
            if let refusal = identityRefusal(Array(stored)) { throw LocalStorageError.decodingFailed(reason: refusal) }
            return UInt64(littleEndian: stored.loadUnaligned(as: UInt64.self))
        }
        let identity = UInt64.random(in: 1...UInt64.max)
        guard !txn.isReadOnly else { return identity }
        var bytes: [UInt8] = []
        bytes.appendLittleEndian(identity)
        try txn.put(meta, key: identityKey, value: bytes)
        return identity
    }

    /// A token for `sequence` of this store.
    func token(_ sequence: UInt64) -> StorageChangeToken { StorageChangeToken(sequence: sequence, store: store) }

    /// Opens (creating) the log's database in a write transaction, or opens it if it exists in a read one.
    static func open(in txn: Transaction) throws -> Database? {
        try txn.openDatabase(name, create: !txn.isReadOnly)
    }

    // MARK: - Writing (the writer's transaction)

    /// Appends one commit's changes, made at `now`, and trims past the retention; the leases they
    /// write over are voided, but for those the commit put after them (`sparing`: lease key → changes logged
    /// before it).
    @discardableResult
    func append(
        _ changes: [Pending], now: LeaseMoment, txn: Transaction, sparing: [[UInt8]: Int] = [:]
    ) throws -> ClosedRange<UInt64>? {
        guard !changes.isEmpty else { return nil }
        try leases?.void(changes, now: now, txn: txn, sparing: sparing)
        let last = try lastEntry(in: txn)
        var sequence = last.sequence
        let appends = last.endsWithSequence
        // 2⁶⁴ commits are never reached: a last key that close to it is a damaged change log.
        guard sequence <= UInt64.max - UInt64(changes.count) else {
            throw LocalStorageError.decodingFailed(
                reason: "the change log's last sequence number \(sequence) is damaged")
        }
        let logged = (sequence + 1)...(sequence + UInt64(changes.count))
        if changes.count > retention {
            // The trim at the end of this commit would delete every entry but the last `retention`: the log's older
            // ones and the first of this commit's own. Those are not written (a batch of 1,000,000 saves wrote
            // 1,000,000 entries and deleted 900,000, which left 35 MiB of free pages in the file), and the older
            // ones all go, as the trim would have them go.
            let keepFrom = logged.upperBound - UInt64(retention) + 1
            try removeEntries(before: keepFrom, txn: txn)
            // The new entries still sort after every sequence left (`appends` stays as found: a foreign key at the
            // end is not one the removal takes).
            sequence = keepFrom - 1
            for change in changes.suffix(retention) {
                sequence += 1
                try put(change, at: sequence, appending: appends, txn: txn)
            }
            return logged
        }
        for change in changes {
            sequence += 1
            try put(change, at: sequence, appending: appends, txn: txn)
        }
        try trim(last: sequence, budget: changes.count + 10_000, txn: txn)
        return logged
    }

    /// Writes `change` as entry `sequence`; with `appending`, at the end of the database (`MDB_APPEND`: no search
    /// for its place), which needs every key there to sort before it. Key and value are made on the stack.
    private func put(_ change: Pending, at sequence: UInt64, appending: Bool, txn: Transaction) throws {
        let valueLength = 13 + change.id.count
        try withUnsafeTemporaryAllocation(byteCount: 8 + valueLength, alignment: 8) { buffer in
            buffer.storeBytes(of: sequence.bigEndian, toByteOffset: 0, as: UInt64.self)
            buffer.storeBytes(of: writer.littleEndian, toByteOffset: 8, as: UInt64.self)
            buffer.storeBytes(of: change.type.littleEndian, toByteOffset: 16, as: UInt32.self)
            buffer[20] = change.kind.rawValue
            change.id.withUnsafeBytes { id in
                UnsafeMutableRawBufferPointer(rebasing: buffer[21...]).copyMemory(from: id)
            }
            try txn.put(
                database, key: UnsafeRawBufferPointer(rebasing: buffer[..<8]),
                value: UnsafeRawBufferPointer(rebasing: buffer[8...]), flags: appending ? UInt32(MDB_APPEND) : 0)
        }
    }

    /// Deletes every entry before `sequence` and marks the log trimmed through the one before it.
    private func removeEntries(before sequence: UInt64, txn: Transaction) throws {
        let first = ChangeLog.key(1)
        try txn.withCursor(database) { cursor in
            while let current = try cursor.seek(atLeast: first), current.key.count == 8,
                UInt64(bigEndian: current.key.loadUnaligned(as: UInt64.self)) < sequence
            {
                try cursor.deleteCurrent()
            }
        }
        try markTrimmed(through: sequence - 1, txn: txn)
    }

    private func trim(last: UInt64, budget: Int, txn: Transaction) throws {
        guard let first = try firstSequence(in: txn) else { return }
        let slack = UInt64(max(1000, retention / 10))
        guard last - first + 1 > UInt64(retention) + slack else { return }
        let keepFrom = last - UInt64(retention) + 1
        var sequence = first
        var deleted = 0
        while sequence < keepFrom, deleted < budget {
            try txn.delete(database, key: ChangeLog.key(sequence))
            sequence += 1
            deleted += 1
        }
        try markTrimmed(through: sequence - 1, txn: txn)
    }

    private func markTrimmed(through sequence: UInt64, txn: Transaction) throws {
        var mark: [UInt8] = []
        mark.appendLittleEndian(sequence)
        try txn.put(database, key: ChangeLog.watermarkKey, value: mark)
    }

    // MARK: - Reading

    /// The sequence of the newest entry, or 0 when the log has none. Keys of another length after the entries
    /// (damage) are stepped over: taking 0 for the last sequence made the next commit write its entries over the
    /// oldest ones, which readers then took for changes they had seen.
    func lastSequence(in txn: Transaction) throws -> UInt64 { try lastEntry(in: txn).sequence }

    /// The newest entry's sequence (0 when the log has none), and whether the database ends with it: only then may
    /// new entries go in with `MDB_APPEND` (a foreign key at the end, which is damage, might sort after them).
    private func lastEntry(in txn: Transaction) throws -> (sequence: UInt64, endsWithSequence: Bool) {
        try txn.withCursor(database) { cursor in
            var entry = try cursor.move(.last)
            var endsWithSequence = true
            while let current = entry {
                if current.key.count == 8 {
                    return (UInt64(bigEndian: current.key.loadUnaligned(as: UInt64.self)), endsWithSequence)
                }
                endsWithSequence = false
                entry = try cursor.move(.previous)
            }
            return (0, endsWithSequence)
        }
    }

    /// The sequence of the oldest entry kept, or nil when there is none.
    func firstSequence(in txn: Transaction) throws -> UInt64? {
        try txn.withCursor(database) { cursor in
            guard let first = try cursor.seek(atLeast: ChangeLog.key(1)), first.key.count == 8 else { return nil }
            return UInt64(bigEndian: first.key.loadUnaligned(as: UInt64.self))
        }
    }

    /// The highest sequence trimmed so far (0 when nothing was): a position below it has lost changes.
    func trimmedThrough(in txn: Transaction) throws -> UInt64 {
        guard let mark = try txn.get(database, key: ChangeLog.watermarkKey), mark.count == 8 else { return 0 }
        return UInt64(littleEndian: mark.loadUnaligned(as: UInt64.self))
    }

    /// Calls `body` with every entry after `sequence`, oldest first, until it returns false. Entries that do
    /// not parse are skipped.
    func forEachEntry(after sequence: UInt64, in txn: Transaction, _ body: (Entry) throws -> Bool) throws {
        try txn.withCursor(database) { cursor in
            var entry = try cursor.seek(atLeast: ChangeLog.key(sequence &+ 1))
            while let current = entry {
                if current.key.count == 8, current.value.count >= 13,
                    let kind = Kind(rawValue: current.value[12])
                {
                    let parsed = Entry(
                        sequence: UInt64(bigEndian: current.key.loadUnaligned(as: UInt64.self)),
                        writer: UInt64(littleEndian: current.value.loadUnaligned(as: UInt64.self)),
                        type: UInt32(littleEndian: current.value.loadUnaligned(fromByteOffset: 8, as: UInt32.self)),
                        kind: kind, id: Array(current.value[13...]))
                    if try !body(parsed) { return }
                }
                entry = try cursor.move(.next)
            }
        }
    }

    static func key(_ sequence: UInt64) -> [UInt8] {
        var key: [UInt8] = []
        key.appendBigEndian(sequence)
        return key
    }
}
