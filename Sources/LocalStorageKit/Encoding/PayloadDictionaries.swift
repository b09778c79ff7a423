import Synchronization

/// The zstd dictionaries a store trained, by id, as `meta` keeps them (`zdict.` ‖ id, big-endian): loaded
/// at open, added as they are trained. A compressed payload names its dictionary, so retraining never
/// breaks older records.
final class PayloadDictionaries: Sendable {
    static let keyPrefix: [UInt8] = Array("zdict.".utf8)

    private struct State {
        var byID: [UInt32: [UInt8]] = [:]
        var newest: UInt32 = 0
    }

    private let state = Mutex(State())

    /// The `meta` key of dictionary `id`.
    static func key(_ id: UInt32) -> [UInt8] {
        keyPrefix + [UInt8(id >> 24), UInt8((id >> 16) & 0xFF), UInt8((id >> 8) & 0xFF), UInt8(id & 0xFF)]
    }

    /// Loads every dictionary in `meta`; the newest is the one named by `zdict.newest`.
    func load(meta: Database, txn: Transaction) throws {
        var found: [UInt32: [UInt8]] = [:]
        try txn.withCursor(meta) { cursor in
            var entry = try cursor.seek(atLeast: PayloadDictionaries.keyPrefix)
            while let current = entry, current.key.starts(with: PayloadDictionaries.keyPrefix) {
                let suffix = Array(current.key.dropFirst(PayloadDictionaries.keyPrefix.count))
                if suffix.count == 4 {
                    let id = suffix.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                    found[id] = Array(current.value)
                }
                entry = try cursor.move(.next)
            }
        }
        var newest: UInt32 = 0
        if let stored = try txn.get(meta, key: PayloadDictionaries.newestKey), stored.count == 4 {
            newest = UInt32(littleEndian: stored.loadUnaligned(as: UInt32.self))
        }
        state.withLock { state in
            state.byID.merge(found) { old, _ in old }
            if found[newest] != nil { state.newest = newest }
        }
    }

    /// Where `meta` names the dictionary new payloads are compressed with.
    static let newestKey: [UInt8] = Array("zdict-newest".utf8)

    /// Dictionary `id`, or nil.
    func dictionary(_ id: UInt32) -> [UInt8]? { state.withLock { $0.byID[id] } }

    /// The dictionary new payloads are compressed with: its id (0 when there is none yet) and bytes.
    var newest: (id: UInt32, bytes: [UInt8]?) {
        state.withLock { ($0.newest, $0.byID[$0.newest]) }
    }

    /// How many dictionaries the store has.
    var count: Int { state.withLock { $0.byID.count } }

    /// Adds a dictionary that is now committed and makes it the newest.
    func add(_ id: UInt32, bytes: [UInt8]) {
        state.withLock { state in
            state.byID[id] = bytes
            state.newest = id
        }
    }
}
