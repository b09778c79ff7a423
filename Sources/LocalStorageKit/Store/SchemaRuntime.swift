import Synchronization

/// Mutable state shared by the copies of one ``TypeSchema``.
final class SchemaRuntime: Sendable {
    /// The read snapshot (transaction id) at which a re-index last left records it could not re-index;
    /// queries on that same snapshot do not try again.
    private let reindexedAt = Atomic<Int>(-1)
    /// What the last re-index could not re-index (the first such record and why), nil when it re-indexed
    /// every stale record.
    private let reindexProblem = Mutex<LocalStorageError?>(nil)
    /// How the type's counts (and page totals) were answered: from the count tree, or by walking entries.
    /// The plan's choice, kept so tests and diagnostics can tell.
    let countsFromTree = Atomic<Int>(0)
    let countsByWalking = Atomic<Int>(0)
    /// Index entries and records the type's queries visited, so tests can tell a plan's cost.
    let entriesVisited = Atomic<Int>(0)
    /// Walks down the count tree the type's queries made (a rank or a locate each; a range count is two).
    let treeWalks = Atomic<Int>(0)
    /// Record headers re-indexes read looking for records of other declarations (layout 5), so tests can tell the
    /// walk's cost.
    let reindexHeadersRead = Atomic<Int>(0)
    /// Walks of every record that set the declaration counters after a damaged record was removed or replaced.
    let declarationRecounts = Atomic<Int>(0)
    /// Whether a read found the type keeping its update order (``TypeSchema/keepsUpdateOrder(_:)``), which it then
    /// does for good.
    let keepsUpdateOrder = Atomic<Bool>(false)
    /// Whether a read sorted the type's headers for want of its update order (``UpdateOrder``): the next query
    /// through the store builds it.
    let updateOrderWanted = Atomic<Bool>(false)
    /// When (the store clock's uptime) a build of the order last met a full map in this process: the next is tried
    /// no sooner than a minute later (each reads every header), and reads go on sorting the headers meanwhile.
    let updateOrderDidNotFitAt = Mutex<Duration?>(nil)
    /// The type's description as last read from `meta` by ``TypeSchema/current(in:)``, with its bytes.
    private let lastDescription = Mutex<(bytes: [UInt8], info: TypeInfo)?>(nil)
    /// Descriptions ``TypeSchema/current(in:)`` decoded, so tests can tell the memo works.
    let descriptionsDecoded = Atomic<Int>(0)
    /// Each Swift type's function computing its index values, made from the reading of `storageIndexes` the
    /// schema's declaration came from (``IndexDeclaration/read(_:)``, given at registration): asking the type for
    /// its declaration at each save (building every ``StorageIndex``) and casting the value to find it cost more
    /// than the values, and a declaration read again later (a flag) could differ from the schema's.
    private let indexValueComputers = Mutex<[ObjectIdentifier: any Sendable]>([:])

    /// The function computing a `T`'s index values for this schema: the one its registration gave, or (for a
    /// schema made without one) one made from the declaration as it reads now.
    func indexValueComputer<T: LocalStorable>(for type: T.Type) -> IndexValueFunction<T> {
        let key = ObjectIdentifier(type)
        if let known = indexValueComputers.withLock({ $0[key] }) as? IndexValueFunction<T> {
            return known
        }
        let made = T.indexValueComputer()
        use(made, for: T.self)
        return made
    }

    /// Makes `computer` the function computing a `T`'s index values for this schema.
    func use<T: LocalStorable>(_ computer: @escaping IndexValueFunction<T>, for type: T.Type) {
        indexValueComputers.withLock { $0[ObjectIdentifier(type)] = computer }
    }

    /// The description whose bytes are `bytes`, when it is the one last decoded.
    func describedAs(_ bytes: UnsafeRawBufferPointer) -> TypeInfo? {
        lastDescription.withLock { last in
            guard let last, last.bytes.withUnsafeBytes({ ByteOrder.compare($0, bytes) == 0 }) else { return nil }
            return last.info
        }
    }

    /// Keeps the description just decoded from `bytes`.
    func noteDescription(_ bytes: UnsafeRawBufferPointer, as info: TypeInfo) {
        descriptionsDecoded.add(1, ordering: .relaxed)
        lastDescription.withLock { $0 = (Array(bytes), info) }
    }

    /// Notes what a re-index that ended at snapshot `snapshot` left (``reindexFirst(at:mayRetry:)``).
    func noteReindex(_ outcome: ReindexOutcome, at snapshot: Int) {
        reindexProblem.withLock { $0 = outcome.firstProblem }
        if outcome.failed > 0 { reindexedAt.store(snapshot, ordering: .relaxed) }
    }

    /// For an indexed read on snapshot `snapshot` that found stale records: whether to re-index first (not
    /// tried on this snapshot yet, and `mayRetry`). Otherwise throws what the last re-index left (a migration's
    /// `migrationFailed`, or `decodingFailed` naming the record), whose index entries belong to another declaration, so that the read does not answer
    /// without them; returns false when it left nothing.
    func reindexFirst(at snapshot: Int, mayRetry: Bool = true) throws(LocalStorageError) -> Bool {
        if mayRetry, reindexedAt.load(ordering: .relaxed) != snapshot { return true }
        if let problem = reindexProblem.withLock({ $0 }) { throw problem }
        return false
    }
}
