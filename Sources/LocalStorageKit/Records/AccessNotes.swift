import Synchronization

/// Reads of records whose recency counts (least-recently-used eviction), noted in memory by readers and
/// folded into the access index by the writer in its next commit: a read costs no write.
///
/// The approximation: a read becomes recency when the writer next commits in this process (it folds what
/// is pending before it evicts, so a record read a moment ago is never the next victim), and the notes
/// hold at most ``capacity`` reads between commits; past that the oldest half is dropped.
final class AccessNotes: Sendable {
    static let capacity = 65_536
    private let pending = Mutex<[(type: UInt32, key: [UInt8])]>([])

    func note(type: UInt32, key: UnsafeRawBufferPointer) {
        let key = Array(key)
        pending.withLock { notes in
            if notes.count >= AccessNotes.capacity { notes.removeFirst(AccessNotes.capacity / 2) }
            notes.append((type, key))
        }
    }

    /// The notes so far, oldest first, leaving none.
    func take() -> [(type: UInt32, key: [UInt8])] {
        pending.withLock { notes in
            defer { notes.removeAll(keepingCapacity: true) }
            return notes
        }
    }

    var isEmpty: Bool { pending.withLock { $0.isEmpty } }
}

/// Evictions since the store opened, by type name.
final class EvictionTally: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    func add(_ typeName: String, _ count: Int = 1) {
        counts.withLock { $0[typeName, default: 0] += count }
    }

    func count(of typeName: String) -> Int { counts.withLock { $0[typeName] ?? 0 } }

    var total: Int { counts.withLock { $0.values.reduce(0, +) } }
}

/// The limits this process knows: the store's, and each registered type's own.
final class LimitBook: Sendable {
    let store: StorageLimits?
    let policy: StorageEvictionPolicy
    private let types = Mutex<[UInt32: StorageLimits]>([:])

    init(store: StorageLimits?, policy: StorageEvictionPolicy) {
        self.store = store.flatMap { $0.isUnbounded ? nil : $0 }
        self.policy = policy
    }

    func register(type: UInt32, limits: StorageLimits?) {
        guard let limits, !limits.isUnbounded else { return }
        types.withLock { $0[type] = limits }
    }

    func limits(ofType type: UInt32) -> StorageLimits? { types.withLock { $0[type] } }

    /// Whether any limit is set: without one, commits skip eviction entirely.
    var isEmpty: Bool { store == nil && types.withLock { $0.isEmpty } }

    /// Whether reads of `type` are noted for least-recently-used eviction.
    func tracksRecency(ofType type: UInt32) -> Bool {
        policy == .leastRecentlyUsed && (store != nil || limits(ofType: type) != nil)
    }
}
