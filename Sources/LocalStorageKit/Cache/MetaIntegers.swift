/// The integers the adaptive policy keeps in `meta` (each a big-endian `UInt64`: clocks, queue and list
/// lengths, the sketch's sample count, the window's size) within one writer transaction: each is read once,
/// changed in memory, and written by ``flush()`` when its value changed.
///
/// A transaction touches a few of them (the clocks, the window's size, the sketch's samples) and three lengths
/// for each type it evicts from, dozens of times each (every placement ticks a clock and moves two lengths), so
/// they are found by each key's fingerprint, made once, rather than by hashing the key's bytes at every step: in a
/// short list, and beyond ``listed`` of them (a store-wide limit over many types) through an index of fingerprints.
final class MetaIntegers {
    /// A key of `meta` holding one of the integers, with a fingerprint of its bytes made once.
    struct Key {
        let bytes: [UInt8]
        let fingerprint: UInt64

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            // FNV-1a: the fingerprint only narrows the search; equal keys are still compared byte for byte.
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            fingerprint = hash
        }

        init(_ name: String) { self.init(Array(name.utf8)) }
    }

    /// The integers as a transaction of this process's writer left them when it committed: the next one starts
    /// from them, without reading `meta`, when no other transaction committed in between (its id is the next).
    struct Carried {
        fileprivate let slots: [Slot]
        /// The id of the transaction that left them.
        let transaction: Int
    }

    fileprivate struct Slot {
        let key: Key
        /// nil while `meta` holds no integer there (or a value that is not eight bytes) and none was set.
        var value: UInt64?
        /// What `meta` holds, as read or last written; nil when unknown (set before it was read) or absent.
        var written: UInt64?
        /// Whether `value` was set since; a flush writes it when it differs from `written`.
        var changed: Bool
    }

    /// The most slots searched one by one; more are found through `byFingerprint`.
    static let listed = 16
    /// The cap on a count: a damaged one past any real count is taken as this, so adjusting it cannot overflow.
    private static let largestCount: UInt64 = 1 << 48

    let txn: Transaction
    let meta: Database
    private var slots: [Slot] = []
    /// The slot of each fingerprint, kept once there are more than ``listed`` slots.
    private var byFingerprint: [UInt64: Int] = [:]

    /// - Parameter carried: what the writer's last commit left; taken when `txn` is the transaction right after it
    ///   (LMDB numbers write transactions one after another, so any other commit in between shows).
    init(txn: Transaction, meta: Database, carried: Carried? = nil) {
        self.txn = txn
        self.meta = meta
        if let carried, carried.transaction &+ 1 == txn.id {
            slots = carried.slots
            if slots.count > MetaIntegers.listed { indexFingerprints(from: 0) }
        } else {
            // Room for a transaction that evicts from one type at once, rather than growing four times.
            slots.reserveCapacity(MetaIntegers.listed)
        }
    }

    /// The integers as `meta` holds them after ``flush()``, for the writer's next transaction should this one
    /// commit. (After a flush no slot is changed and each holds what `meta` does.)
    func carry() -> Carried { Carried(slots: slots, transaction: txn.id) }

    /// The integer at `key`, or nil when `meta` holds none (or a value that is not eight bytes).
    func stored(_ key: Key) throws -> UInt64? { slots[try slot(key)].value }

    /// The integer at `key`, 0 when there is none.
    func value(_ key: Key) throws -> UInt64 { try stored(key) ?? 0 }

    /// A count at `key`; a damaged one past any real count is capped, so that adjusting it cannot overflow.
    func count(_ key: Key) throws -> Int { Int(min(try value(key), MetaIntegers.largestCount)) }

    /// Sets the integer at `key`; it is written at the next flush if it differs from what was there.
    func set(_ key: Key, to value: UInt64) {
        guard let index = find(key) else {
            append(Slot(key: key, value: value, written: nil, changed: true))
            return
        }
        assign(value, at: index)
    }

    /// Adds `delta` to the count at `key`, never going below 0.
    func adjust(_ key: Key, by delta: Int) throws {
        guard delta != 0 else { return }
        let index = try slot(key)
        let count = Int(min(slots[index].value ?? 0, MetaIntegers.largestCount))
        assign(UInt64(max(0, count + delta)), at: index)
    }

    /// Advances the logical clock at `key` by one and returns its new value.
    func tick(_ key: Key) throws -> UInt64 {
        let index = try slot(key)
        let next = (slots[index].value ?? 0) &+ 1
        assign(next, at: index)
        return next
    }

    /// Writes the integers that changed: a count that went up and back down within the transaction (a record
    /// moved in and out of a queue) is not written again.
    func flush() throws {
        for index in slots.indices where slots[index].changed {
            slots[index].changed = false
            let value = slots[index].value ?? 0
            if slots[index].written == value { continue }
            var bytes: [UInt8] = []
            bytes.appendBigEndian(value)
            try txn.put(meta, key: slots[index].key.bytes, value: bytes)
            slots[index].written = value
        }
    }

    /// The position of `key`'s slot, read from `meta` the first time the transaction asks for it.
    private func slot(_ key: Key) throws -> Int {
        if let index = find(key) { return index }
        var value: UInt64?
        if let bytes = try txn.get(meta, key: key.bytes), bytes.count == 8 {
            value = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
        }
        append(Slot(key: key, value: value, written: value, changed: false))
        return slots.count - 1
    }

    private func find(_ key: Key) -> Int? {
        if slots.count > MetaIntegers.listed {
            // Every slot's fingerprint is indexed: none there, no slot of this key.
            guard let index = byFingerprint[key.fingerprint] else { return nil }
            if slots[index].key.bytes == key.bytes { return index }
            // Two keys of one fingerprint: the index names the first; look at them all.
        }
        return slots.firstIndex { $0.key.fingerprint == key.fingerprint && $0.key.bytes == key.bytes }
    }

    /// Sets a slot's value, marking it for the flush when it changes.
    private func assign(_ value: UInt64, at index: Int) {
        guard slots[index].value != value else { return }
        slots[index].value = value
        slots[index].changed = true
    }

    private func append(_ slot: Slot) {
        slots.append(slot)
        // Past the list's length every slot is indexed: all of them the first time, then each new one.
        if slots.count > MetaIntegers.listed {
            indexFingerprints(from: slots.count == MetaIntegers.listed + 1 ? 0 : slots.count - 1)
        }
    }

    /// Indexes the slots from `start` on by fingerprint, the first slot of a fingerprint keeping it.
    private func indexFingerprints(from start: Int) {
        for index in start..<slots.count where byFingerprint[slots[index].key.fingerprint] == nil {
            byFingerprint[slots[index].key.fingerprint] = index
        }
    }
}
