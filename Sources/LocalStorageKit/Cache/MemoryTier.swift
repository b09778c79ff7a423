import Foundation
import Synchronization

/// Decoded values of recently fetched records, so that a fetch of a hot record is a dictionary lookup
/// instead of an LMDB read and a decode (``MemoryCacheConfiguration``; one per `LocalStorage`).
///
/// **Never stale.** Every value held is current as of one snapshot of the store, the *validated*
/// transaction, whose change-log position the tier keeps. A lookup first compares LMDB's last transaction
/// id (`mdb_env_info`, a read of the meta pages in the map, which every process's commit updates before
/// its write returns) with the validated one. When they differ, the tier reads the change log after its
/// position in a fresh snapshot and drops exactly the values of the records changed since (every write
/// path of every process appends to the log in the commit's own transaction: saves, deletes, clears,
/// expirations, purges, evictions, imports); when the log was trimmed past the position, it drops every
/// value. A value read at a snapshot older than the validated one is not kept (it may have changed in
/// between); one read at a newer snapshot first brings the tier up to that snapshot.
///
/// Bounded by a number of values and their payload bytes (the stored size), least recently used first out.
/// Lock order: a read transaction may be open when the tier's lock is taken, never the other way round
/// (map growth holds readers off, so waiting for the lock inside a read must never wait for a read).
final class MemoryTier: Sendable {
    /// A record: its type's number in the store and its id, compared and hashed by the id's UTF-8 bytes,
    /// as the store keys records (`String` equality would make "é" and "e\u{301}", two records, one key).
    struct Key: Hashable, Sendable {
        let type: UInt32
        let id: String

        /// Ids are equal when their UTF-8 bytes are (as record keys are), not by Unicode equivalence.
        static func == (a: Key, b: Key) -> Bool {
            guard a.type == b.type else { return false }
            var (left, right) = (a.id, b.id)
            return left.withUTF8 { left in
                right.withUTF8 { right in
                    guard left.count == right.count else { return false }
                    guard let l = left.baseAddress, let r = right.baseAddress else { return true }  // Both empty.
                    return memcmp(l, r, left.count) == 0
                }
            }
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(type)
            var id = self.id
            id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    private struct Slot {
        var key: Key
        var value: any Sendable
        /// The type `value` was kept as: a lookup compares it instead of casting.
        var type: ObjectIdentifier
        /// ns since 1970; 0 = never.
        var expiresAt: Int64
        var bytes: Int
        /// Neighbours in recency order (-1: none): `newer` towards the head.
        var newer: Int
        var older: Int
        /// The tier's bump count when the slot last went to the head.
        var bumpedAt: Int
    }

    private struct State {
        var slots: [Slot] = []
        var freeSlots: [Int] = []
        var positions: [Key: Int] = [:]
        /// Most and least recently used slots (-1 when empty).
        var head = -1
        var tail = -1
        var bytes = 0
        /// The transaction every held value is current at (-1: none yet).
        var validated = -1
        /// The change-log sequence at `validated`; nil until known (the tier then holds nothing).
        var position: UInt64?
        var hits = 0
        var misses = 0
        var invalidations = 0
        /// Moves to the head so far (insertions included): a slot went to the head at most this minus its
        /// `bumpedAt` moves ago, so it is at most that many places from the head.
        var bumps = 0
    }

    let maxRecords: Int
    let maxBytes: Int
    private let environment: Environment
    private let changeLog: ChangeLog
    private let logger: (any StorageLogger)?
    private let state = Mutex(State())

    /// A catch-up that would walk more log entries than this (and more than 4 per value held) drops every
    /// value instead.
    static let catchUpWalkLimit = 4096

    init(
        maxRecords: Int, maxBytes: Int, environment: Environment, changeLog: ChangeLog,
        logger: (any StorageLogger)?
    ) {
        self.maxRecords = maxRecords
        self.maxBytes = maxBytes
        self.environment = environment
        self.changeLog = changeLog
        self.logger = logger
    }

    // MARK: - Figures

    /// Whether the tier holds a value for `key` (for tests: it touches neither the order nor the counters).
    func holds(_ key: Key) -> Bool { state.withLock { $0.positions[key] != nil } }

    /// Lookups answered since the tier was made.
    var hits: Int { state.withLock { $0.hits } }
    /// Lookups not answered since the tier was made.
    var misses: Int { state.withLock { $0.misses } }
    /// Values held.
    var count: Int { state.withLock { $0.positions.count } }
    /// Payload bytes of the values held.
    var bytes: Int { state.withLock { $0.bytes } }
    /// Values dropped because their record changed (tests and diagnostics).
    var invalidations: Int { state.withLock { $0.invalidations } }

    // MARK: - Lookup

    /// The value held for `key` when it is current and not expired at `now` and is a `T`, as it is kept
    /// (``unwrap(_:as:)`` opens it); counts a hit, and a miss when `countingMiss` (a caller that goes on to
    /// ask again, as `fetch` after its synchronous try, counts it once).
    ///
    /// When the store committed since the tier was last brought up to date, reads the change log first
    /// (outside the tier's lock, in a read transaction of its own).
    ///
    /// Returns the existential rather than a `T?`: an `Optional<T>` made in unspecialized code is a runtime
    /// metadata lookup each time (callgrind: ~330 instructions of a ~4,600-instruction hit), so a caller
    /// that returns `T?` anyway opens it straight into its own result.
    func held<T: Sendable>(_ type: T.Type, for key: Key, now: Int64, countingMiss: Bool) -> (any Sendable)? {
        // Nothing generic crosses the lock: the held value comes out as it is kept.
        let wanted = ObjectIdentifier(T.self)
        let last = environment.lastTransactionID
        var held: (any Sendable)?
        // An empty tier has nothing to vouch for: the next value kept brings it up to date.
        let isCurrent = state.withLock { state in
            guard state.validated == last || state.positions.isEmpty else { return false }
            held = lookUp(wanted, key, now: now, countingMiss: countingMiss, &state)
            return true
        }
        if !isCurrent {
            do {
                try environment.read { txn in
                    state.withLock { state in self.catchUp(&state, txn: txn) }
                }
            } catch {
                state.withLock { state in self.dropAll(&state, because: error) }
            }
            held = state.withLock { state in lookUp(wanted, key, now: now, countingMiss: countingMiss, &state) }
        }
        return held
    }

    /// The value held for `key` as of `txn`'s snapshot (brought up to it first when it is newer), or nil when
    /// the tier has no current value for it there; counts a hit or a miss. For reads of many records in one
    /// snapshot (`fetch(_:ids:)`), whose misses are read in that same transaction.
    ///
    /// Call it inside `txn`. A snapshot older than the one the tier was validated at is not answered from
    /// memory (nil, nothing counted).
    func value<T: Sendable>(_ type: T.Type, for key: Key, now: Int64, in txn: Transaction) -> T? {
        let wanted = ObjectIdentifier(T.self)
        let held: (any Sendable)? = state.withLock { state in
            if txn.id > state.validated || state.position == nil { catchUp(&state, txn: txn) }
            guard txn.id == state.validated else { return nil }
            return lookUp(wanted, key, now: now, countingMiss: true, &state)
        }
        guard let held else { return nil }
        return Self.unwrap(held, as: T.self)
    }

    /// `held` as the `T` it was kept as (``lookUp(_:_:now:countingMiss:_:)`` compared the types). Opened, not cast: a cast
    /// from an existential to an unspecialized `T` took the runtime's slow path, about a tenth of a hit.
    static func unwrap<T>(_ held: any Sendable, as type: T.Type) -> T? {
        func open<Held: Sendable>(_ value: Held) -> T? {
            guard Held.self == T.self else { return nil }
            return unsafeBitCast(value, to: T.self)
        }
        return open(held)
    }

    private func lookUp(
        _ type: ObjectIdentifier, _ key: Key, now: Int64, countingMiss: Bool, _ state: inout State
    ) -> (any Sendable)? {
        guard let slot = state.positions[key] else {
            if countingMiss { state.misses += 1 }
            return nil
        }
        // The slot's fields are read where they are: a copy of the slot retains its key and value.
        let expiresAt = state.slots[slot].expiresAt
        guard expiresAt == 0 || expiresAt > now, state.slots[slot].type == type else {
            remove(slot, &state)
            if countingMiss { state.misses += 1 }
            return nil
        }
        // A value in the most recent quarter of the tier stays where it is (memcached's bump limit): moving
        // it touches its neighbours, two cache misses in a large tier. So the order is least recently used
        // but within that quarter, and a value just hit is never more than a quarter of the tier from the
        // head: it outlives the next three quarters of the tier's fetches of other ids, whatever they are.
        if state.bumps - state.slots[slot].bumpedAt > state.positions.count / 4 {
            moveToHead(slot, &state)
            state.slots[slot].bumpedAt = state.bumps
            state.bumps += 1
        }
        state.hits += 1
        // Through a pointer: an array subscript here copied the whole slot (retaining and releasing its key).
        return state.slots.withUnsafeBufferPointer { (slots: UnsafeBufferPointer<Slot>) -> any Sendable in
            slots[slot].value
        }
    }

    /// Keeps `value`, read from the record's stored payload of `bytes` bytes in `txn`, unless a newer
    /// snapshot was validated meanwhile; brings the tier up to `txn` first when it is newer.
    ///
    /// Call it inside the read transaction the value was read in.
    func keep<T: Sendable>(_ value: T, for key: Key, expiresAt: Int64, bytes: Int, readIn txn: Transaction) {
        let type = ObjectIdentifier(T.self)
        let value: any Sendable = value
        guard bytes <= maxBytes, maxRecords > 0 else { return }
        state.withLock { state in
            if txn.id > state.validated || state.position == nil { catchUp(&state, txn: txn) }
            guard txn.id == state.validated else { return }
            if let slot = state.positions[key] { remove(slot, &state) }
            while state.positions.count >= maxRecords || state.bytes + bytes > maxBytes, state.tail >= 0 {
                remove(state.tail, &state)
            }
            let slot = Slot(
                key: key, value: value, type: type, expiresAt: expiresAt, bytes: bytes, newer: -1, older: -1,
                bumpedAt: state.bumps)
            let position: Int
            if let free = state.freeSlots.popLast() {
                state.slots[free] = slot
                position = free
            } else {
                position = state.slots.count
                state.slots.append(slot)
            }
            state.positions[key] = position
            state.bytes += bytes
            state.bumps += 1
            linkAtHead(position, &state)
        }
    }

    /// Drops every value held.
    func removeAll() {
        state.withLock { state in
            state.invalidations += state.positions.count
            clear(&state)
        }
    }

    // MARK: - Keeping current

    /// Brings the tier up to `txn`'s snapshot: drops the values of the records the change log says changed
    /// after the tier's position, or every value when the log cannot say (trimmed past it, or too long a
    /// walk). A snapshot no newer than the validated one changes nothing.
    private func catchUp(_ state: inout State, txn: Transaction) {
        let snapshot = txn.id
        guard snapshot > state.validated || state.position == nil else { return }
        do {
            let last = try changeLog.lastSequence(in: txn)
            defer {
                state.position = last
                state.validated = snapshot
            }
            guard let position = state.position else {
                clear(&state)
                return
            }
            guard last != position else { return }
            let walkLimit = max(MemoryTier.catchUpWalkLimit, 4 * state.positions.count)
            let trimmed = try changeLog.trimmedThrough(in: txn)
            if last < position || last - position > UInt64(walkLimit) || trimmed > position {
                state.invalidations += state.positions.count
                clear(&state)
                return
            }
            guard !state.positions.isEmpty else { return }
            try changeLog.forEachEntry(after: position, in: txn) { entry in
                if entry.kind == .cleared {
                    let type = entry.type
                    for (key, slot) in state.positions where key.type == type {
                        remove(slot, &state)
                        state.invalidations += 1
                    }
                } else if let slot = state.positions[
                    Key(
                        type: entry.type,
                        id: String(decoding: entry.id, as: UTF8.self))]
                {
                    remove(slot, &state)
                    state.invalidations += 1
                }
                return true
            }
        } catch {
            dropAll(&state, because: error)
        }
    }

    /// Drops every value and forgets the position after the change log could not be read: nothing held can
    /// be vouched for. The next value kept starts afresh.
    private func dropAll(_ state: inout State, because error: any Error) {
        state.invalidations += state.positions.count
        clear(&state)
        state.position = nil
        state.validated = -1
        logger?.log(
            level: .warning, message: "The memory tier could not read the change log and dropped its values",
            metadata: ["error": "\(error)"])
    }

    // MARK: - Recency list

    private func clear(_ state: inout State) {
        state.slots.removeAll(keepingCapacity: true)
        state.freeSlots.removeAll(keepingCapacity: true)
        state.positions.removeAll(keepingCapacity: true)
        state.head = -1
        state.tail = -1
        state.bytes = 0
    }

    private func remove(_ slot: Int, _ state: inout State) {
        unlink(slot, &state)
        state.positions[state.slots[slot].key] = nil
        state.bytes -= state.slots[slot].bytes
        state.slots[slot].value = ()
        state.freeSlots.append(slot)
    }

    private func unlink(_ slot: Int, _ state: inout State) {
        let (newer, older) = (state.slots[slot].newer, state.slots[slot].older)
        if newer >= 0 { state.slots[newer].older = older } else { state.head = older }
        if older >= 0 { state.slots[older].newer = newer } else { state.tail = newer }
        state.slots[slot].newer = -1
        state.slots[slot].older = -1
    }

    private func linkAtHead(_ slot: Int, _ state: inout State) {
        state.slots[slot].older = state.head
        state.slots[slot].newer = -1
        if state.head >= 0 { state.slots[state.head].newer = slot }
        state.head = slot
        if state.tail < 0 { state.tail = slot }
    }

    private func moveToHead(_ slot: Int, _ state: inout State) {
        guard state.head != slot else { return }
        unlink(slot, &state)
        linkAtHead(slot, &state)
    }
}
