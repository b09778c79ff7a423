import Synchronization

/// Reads of records whose recency counts (least-recently-used eviction), noted in memory by readers and
/// folded into the access index by the writer in its next commit: a read costs no write.
///
/// The approximation: a read becomes recency when the writer next commits in this process (it folds what
/// is pending before it evicts, so a record read a moment ago is never the next victim), and the notes
/// hold at most ``capacity`` reads between commits; past that the oldest half is dropped. A process that
/// only reads still counts: when ``foldThreshold`` reads are pending, an empty commit is handed to the
/// writer (``whenFull(_:)``), which folds them into the store that every process's writer shares.
final class AccessNotes: Sendable {
    static let capacity = 65_536
    /// The pending reads that ask the writer for a commit that folds them.
    static let foldThreshold = 4_096
    /// The pending reads, and whether a commit was asked for that has not taken them yet.
    private let pending = Mutex((notes: [(type: UInt32, key: [UInt8])](), asked: false))
    private let full = Mutex<(@Sendable () -> Void)?>(nil)

    func note(type: UInt32, key: UnsafeRawBufferPointer) {
        let key = Array(key)
        let asks = pending.withLock { pending in
            if pending.notes.count >= AccessNotes.capacity { pending.notes.removeFirst(AccessNotes.capacity / 2) }
            pending.notes.append((type, key))
            // At the threshold or past it (a fold that failed left more): once until a commit takes them.
            guard pending.notes.count >= AccessNotes.foldThreshold, !pending.asked else { return false }
            pending.asked = true
            return true
        }
        if asks, let action = full.withLock({ $0 }) { action() }
    }

    /// Lets the next note ask for a commit again: the one asked for failed before it took the notes.
    func foldFailed() {
        pending.withLock { $0.asked = false }
    }

    /// Puts back notes ``take()`` gave to a transaction that did not commit, before the ones noted since (at most
    /// ``capacity`` in all, the newest kept), for the next commit (review-94 #3: they were lost).
    func giveBack(_ taken: [(type: UInt32, key: [UInt8])]) {
        guard !taken.isEmpty else { return }
        pending.withLock { pending in
            let room = max(0, AccessNotes.capacity - pending.notes.count)
            pending.notes.insert(contentsOf: taken.suffix(room), at: 0)
            pending.asked = false
        }
    }

    /// Sets what runs when the pending reads reach ``foldThreshold`` (the store hands its writer a commit).
    func whenFull(_ action: @escaping @Sendable () -> Void) {
        full.withLock { $0 = action }
    }

    /// The notes so far, oldest first, leaving none.
    func take() -> [(type: UInt32, key: [UInt8])] {
        pending.withLock { pending in
            defer {
                pending.notes.removeAll(keepingCapacity: true)
                pending.asked = false
            }
            return pending.notes
        }
    }

    var isEmpty: Bool { pending.withLock { $0.notes.isEmpty } }

}

/// Evictions since the store opened, by type name (compared by bytes, as the store keys types).
final class EvictionTally: Sendable {
    private let counts = Mutex<[ExactName: Int]>([:])
    private let walkedEntries = Mutex(0)
    private let foldedReads = Mutex((reads: 0, placed: 0))

    /// Notes a fold of `reads` noted reads that placed `placed` records in the eviction order.
    func folded(reads: Int, placed: Int) {
        guard reads > 0 else { return }
        foldedReads.withLock { $0 = ($0.reads + reads, $0.placed + placed) }
    }

    /// The noted reads folded since the store opened, and the records they placed (tests see repeated reads of
    /// a record placed once).
    var folds: (reads: Int, placed: Int) { foldedReads.withLock { $0 } }

    /// Notes `count` entries an eviction run's walks passed over without taking them.
    func walked(_ count: Int) {
        guard count > 0 else { return }
        walkedEntries.withLock { $0 += count }
    }

    /// How many entries eviction walks passed over since the store opened (tests see eviction stay linear in
    /// the records a commit writes).
    var walked: Int { walkedEntries.withLock { $0 } }

    func add(_ typeName: String, _ count: Int = 1) {
        counts.withLock { $0[ExactName(typeName), default: 0] += count }
    }

    func count(of typeName: String) -> Int { counts.withLock { $0[ExactName(typeName)] ?? 0 } }

    var total: Int { counts.withLock { $0.values.reduce(0, +) } }
}

/// The limits this process knows: the store's, and each registered type's own.
final class LimitBook: Sendable {
    /// The store's limits and eviction policy: the configuration's, or the app's that took over a store the
    /// maintenance API opened first in this process (``adopt(store:policy:)``).
    private let settings: Mutex<(store: StorageLimits?, policy: StorageEvictionPolicy)>
    /// Each type number's limits, with the stored type's name that registered them.
    private let types = Mutex<[UInt32: (name: ExactName, limits: StorageLimits)]>([:])

    /// Limits no commit of this process has kept yet: a type's registered since, and the store's since it opened
    /// (a store reopened with lower limits, an app whose type's limit went down, comes within them at its next
    /// commit, whatever that commit writes).
    private let unchecked: Mutex<(types: Set<UInt32>, store: Bool)>

    init(store: StorageLimits?, policy: StorageEvictionPolicy) {
        let store = store.flatMap { $0.isUnbounded ? nil : $0 }
        settings = Mutex((store, policy))
        unchecked = Mutex(([], store != nil))
    }

    /// The limits to keep at the next commit whatever it writes (see `unchecked`).
    var uncheckedLimits: (types: Set<UInt32>, store: Bool) { unchecked.withLock { $0 } }

    /// Notes that a commit kept these limits.
    func checked(types: Set<UInt32>, store: Bool) {
        unchecked.withLock { unchecked in
            unchecked.types.subtract(types)
            if store { unchecked.store = false }
        }
    }

    var store: StorageLimits? { settings.withLock { $0.store } }
    var policy: StorageEvictionPolicy { settings.withLock { $0.policy } }

    /// Takes the app's limits and policy over from the maintenance API, which opened the store first in this
    /// process with none.
    func adopt(store: StorageLimits?, policy: StorageEvictionPolicy) {
        let store = store.flatMap { $0.isUnbounded ? nil : $0 }
        settings.withLock { $0 = (store, policy) }
        if store != nil { unchecked.withLock { $0.store = true } }
    }

    /// Notes the limits of the stored type `name`, numbered `type`. A number registered inside a write
    /// transaction that then failed is given to the next new type: its registration replaces what another
    /// name left under the number (with no limits, it removes them), so one type never runs under another's.
    /// Another declaration of the same stored type without limits keeps the ones noted.
    func register(type: UInt32, name: String, limits: StorageLimits?) {
        let name = ExactName(name)
        types.withLock { types in
            if let limits, !limits.isUnbounded {
                if types[type]?.limits != limits { unchecked.withLock { _ = $0.types.insert(type) } }
                types[type] = (name, limits)
            } else if let held = types[type], held.name != name {
                types[type] = nil
            }
        }
    }

    func limits(ofType type: UInt32) -> StorageLimits? { types.withLock { $0[type]?.limits } }

    /// The largest `maxRecords` of the store's and the types' limits, if any (sizes the adaptive sketch).
    var largestRecordLimit: Int? {
        let own = types.withLock { $0.values.compactMap(\.limits.maxRecords).max() }
        return [store?.maxRecords, own].compactMap { $0 }.max()
    }

    /// Whether any limit is set: without one, commits skip eviction entirely.
    var isEmpty: Bool { store == nil && types.withLock { $0.isEmpty } }

    /// Whether reads of `type` are noted for least-recently-used or adaptive eviction.
    func tracksRecency(ofType type: UInt32) -> Bool {
        (policy == .leastRecentlyUsed || policy == .adaptive) && (store != nil || limits(ofType: type) != nil)
    }
}
