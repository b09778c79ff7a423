import Synchronization

/// The zstd dictionaries a store trained, by id, as `meta` keeps them (`zdict.` ‖ id, big-endian): loaded
/// at open, added as they are trained. A compressed payload names its dictionary, so retraining never
/// breaks older records.
final class PayloadDictionaries: Sendable {
    static let keyPrefix: [UInt8] = Array("zdict.".utf8)

    private struct State {
        var byID: [UInt32: [UInt8]] = [:]
        var digested: [UInt32: ZstdDigestedDictionary] = [:]
        var newest: UInt32 = 0
    }

    private let state = Mutex(State())

    /// The `meta` key of dictionary `id`.
    static func key(_ id: UInt32) -> [UInt8] {
        keyPrefix + [UInt8(id >> 24), UInt8((id >> 16) & 0xFF), UInt8((id >> 8) & 0xFF), UInt8(id & 0xFF)]
    }

    /// The dictionary entries of `meta` as stored (sealed in an encrypted store), and the entry naming the
    /// newest, for ``load(metaEntries:)`` once they are opened.
    static func storedEntries(meta: Database, txn: Transaction) throws -> [(key: [UInt8], value: [UInt8])] {
        var entries: [(key: [UInt8], value: [UInt8])] = []
        try txn.withCursor(meta) { cursor in
            var entry = try cursor.seek(atLeast: keyPrefix)
            while let current = entry, current.key.starts(with: keyPrefix) {
                entries.append((Array(current.key), Array(current.value)))
                entry = try cursor.move(.next)
            }
        }
        if let stored = try txn.get(meta, key: newestKey) { entries.append((newestKey, Array(stored))) }
        return entries
    }

    /// Dictionary `id` as `meta` holds it now (sealed in an encrypted store), or nil, read beside whatever
    /// transaction the calling thread is in (a decode that met a dictionary another process trained).
    static func stored(_ id: UInt32, meta: Database, in environment: Environment) throws -> [UInt8]? {
        try environment.readBeside { txn in try txn.get(meta, key: key(id)).map { Array($0) } }
    }

    /// Whether `bytes` are a zstd dictionary as zstd wrote it (its magic number), not sealed.
    static func isPlain(_ bytes: [UInt8]) -> Bool { bytes.starts(with: [0x37, 0xA4, 0x30, 0xEC]) }

    /// Loads the dictionaries among `meta`'s entries (as a salvage walk reads them from a damaged file,
    /// in any order; other entries are skipped).
    func load(metaEntries: [(key: [UInt8], value: [UInt8])]) {
        var found: [UInt32: [UInt8]] = [:]
        var newest: UInt32 = 0
        for entry in metaEntries {
            if entry.key == PayloadDictionaries.newestKey, entry.value.count == 4 {
                newest = entry.value.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            } else if entry.key.starts(with: PayloadDictionaries.keyPrefix) {
                let suffix = entry.key.dropFirst(PayloadDictionaries.keyPrefix.count)
                guard suffix.count == 4 else { continue }
                found[suffix.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }] = entry.value
            }
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

    /// Dictionary `id` digested by zstd (once, on first use), or nil when there is no such dictionary or zstd
    /// cannot digest it.
    func digested(_ id: UInt32) -> ZstdDigestedDictionary? {
        state.withLock { state in
            if let digested = state.digested[id] { return digested }
            guard let bytes = state.byID[id], let digested = ZstdDigestedDictionary(bytes) else { return nil }
            state.digested[id] = digested
            return digested
        }
    }

    /// The dictionary new payloads are compressed with: its id (0 when there is none yet) and bytes.
    var newest: (id: UInt32, bytes: [UInt8]?) {
        state.withLock { ($0.newest, $0.byID[$0.newest]) }
    }

    /// How many dictionaries the store has.
    var count: Int { state.withLock { $0.byID.count } }

    /// Adds a dictionary that is now committed and makes it the newest.
    func add(_ id: UInt32, bytes: [UInt8]) {
        state.withLock { state in
            if state.byID[id] != bytes { state.digested[id] = nil }
            state.byID[id] = bytes
            state.newest = id
        }
    }
}
