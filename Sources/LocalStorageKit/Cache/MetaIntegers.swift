/// The integers the adaptive policy keeps in `meta` (each a big-endian `UInt64`: clocks, queue and list
/// lengths, the sketch's sample count, the window's size) within one writer transaction: each is read once,
/// changed in memory, and written by ``flush()`` when its value changed.
final class MetaIntegers {
    let txn: Transaction
    let meta: Database
    private var values: [[UInt8]: UInt64] = [:]
    private var changed: Set<[UInt8]> = []

    init(txn: Transaction, meta: Database) {
        self.txn = txn
        self.meta = meta
    }

    /// The integer at `key`, or nil when `meta` holds none (or a value that is not eight bytes).
    func stored(_ key: [UInt8]) throws -> UInt64? {
        if let cached = values[key] { return cached }
        guard let bytes = try txn.get(meta, key: key), bytes.count == 8 else { return nil }
        let value = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
        values[key] = value
        return value
    }

    /// The integer at `key`, 0 when there is none.
    func value(_ key: [UInt8]) throws -> UInt64 { try stored(key) ?? 0 }

    /// A count at `key`; a damaged one past any real count is capped, so that adjusting it cannot overflow.
    func count(_ key: [UInt8]) throws -> Int { Int(min(try value(key), 1 << 48)) }

    /// Sets the integer at `key`; it is written at the next flush if it differs from what was there.
    func set(_ key: [UInt8], to value: UInt64) {
        guard values[key] != value else { return }
        values[key] = value
        changed.insert(key)
    }

    /// Adds `delta` to the count at `key`, never going below 0.
    func adjust(_ key: [UInt8], by delta: Int) throws {
        guard delta != 0 else { return }
        set(key, to: UInt64(max(0, try count(key) + delta)))
    }

    /// Advances the logical clock at `key` by one and returns its new value.
    func tick(_ key: [UInt8]) throws -> UInt64 {
        let next = try value(key) &+ 1
        set(key, to: next)
        return next
    }

    /// Writes the integers that changed.
    func flush() throws {
        for key in changed {
            var bytes: [UInt8] = []
            bytes.appendBigEndian(values[key] ?? 0)
            try txn.put(meta, key: key, value: bytes)
        }
        changed.removeAll()
    }
}
