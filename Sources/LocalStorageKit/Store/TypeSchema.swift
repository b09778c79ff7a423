/// The open databases of one stored type, as one declaration of it sees them.
///
/// Databases are named by the numbers `meta` allocates (see ``TypeInfo``), never by user names:
/// `r.<type#>` records (key id), `u.<type#>` update times, `e.<type#>` expiry times, `s.<type#>`
/// declaration signatures (each key a signature, its sorted duplicates the ids indexed with it), and
/// `i.<type#>.<slot#>` one per (index name, kind) the type ever declared (key ordered value). A name
/// with dots, `0x00` or any length therefore never collides with another, and no database is ever
/// dropped while someone may hold its handle.
struct TypeSchema: Sendable {
    struct Index: Sendable {
        let name: String
        let nameBytes: [UInt8]
        let kind: IndexKind
        let slot: UInt32
        let dbi: Database
        /// The bytes the index's counters in the count tree start with (type and slot numbers).
        let counterPrefix: [UInt8]
    }

    /// What the schema opened, shared by its copies: every operation copies its type's schema out of the
    /// cache, and a copy is then one retain instead of one per array, set and string (perf put those copies
    /// at ~10% of a memory-tier hit).
    private final class Opened: Sendable {
        let name: String
        let number: UInt32
        let records: Database
        let updated: Database
        let expiry: Database
        let signatures: Database
        let counts: Database?
        let indexes: [Index]
        let allIndexes: [Index]
        let knownSignatures: Set<UInt64>
        /// The signatures of the type's declarations by number (their order in ``TypeInfo/declarations``): a
        /// compact header names its declaration by number.
        let declarationSignatures: [UInt64]
        let declaration: IndexDeclaration
        /// The declaration's signature and its key in the signature database, computed once: every query
        /// checks the database for records indexed with another declaration.
        let signature: UInt64
        let signatureKey: [UInt8]
        /// The bytes the type's declaration counters start with, and this declaration's counter (layout 5).
        let declarationCountPrefix: [UInt8]
        let declarationCountKey: [UInt8]
        let version: Int
        let runtime: SchemaRuntime
        let unorderedMarker: (meta: Database, key: [UInt8])?

        init(
            name: String, number: UInt32, records: Database, updated: Database, expiry: Database,
            signatures: Database, counts: Database?, indexes: [Index], allIndexes: [Index],
            declarationSignatures: [UInt64], declaration: IndexDeclaration, version: Int, runtime: SchemaRuntime,
            unorderedMarker: (meta: Database, key: [UInt8])?
        ) {
            self.unorderedMarker = unorderedMarker
            self.declarationSignatures = declarationSignatures
            self.name = name
            self.number = number
            self.records = records
            self.updated = updated
            self.expiry = expiry
            self.signatures = signatures
            self.counts = counts
            self.indexes = indexes
            self.allIndexes = allIndexes
            knownSignatures = Set(declarationSignatures)
            self.declaration = declaration
            signature = declaration.signature
            signatureKey = RecordWriter.signatureKey(signature)
            declarationCountPrefix = CountTree.declarationCountPrefix(type: number)
            declarationCountKey = CountTree.declarationCountKey(type: number, signature: signature)
            self.version = version
            self.runtime = runtime
        }
    }

    private let opened: Opened

    var name: String { opened.name }
    var number: UInt32 { opened.number }
    var records: Database { opened.records }
    var updated: Database { opened.updated }
    var expiry: Database { opened.expiry }
    var signatures: Database { opened.signatures }
    /// The store's count tree (``CountTree``), or nil when the store has none (a read-only store of an
    /// older layout, or a benchmark's store made without one): counts then walk the index. Only the store's
    /// opening creates it, so every schema of a store agrees.
    var counts: Database? { opened.counts }
    /// The indexes of this declaration, in declaration order.
    var indexes: [Index] { opened.indexes }
    /// Every index the type had declared when this schema was opened, retired ones included: a record
    /// indexed with any declaration in ``knownSignatures`` has entries only in these.
    var allIndexes: [Index] { opened.allIndexes }
    var knownSignatures: Set<UInt64> { opened.knownSignatures }
    /// The signatures of the type's declarations by number, as the type's description had them when this schema
    /// was opened.
    var declarationSignatures: [UInt64] { opened.declarationSignatures }
    var declaration: IndexDeclaration { opened.declaration }
    var version: Int { opened.version }
    /// State shared by every copy of this schema (the re-index memo).
    var runtime: SchemaRuntime { opened.runtime }
    /// The type's own limits (``LocalStorable/storageLimits``), when this process knows the type.
    var limits: StorageLimits? = nil
    /// Whether reads of the type are noted for least-recently-used eviction (``AccessNotes``).
    var tracksRecency = false
    /// How the store seals and compresses payloads; nil for a schema that never writes or decodes one
    /// (purges, evictions, statistics), where payloads are stored and read as they are.
    var sealing: PayloadSealing? = nil
    /// Whether new records are written with the compact header (``RecordLayout/compact``): in a store of
    /// layout 4, which no older version opens. Records it rewrites keep their layout either way.
    var writesCompactHeaders = false
    /// Whether the store counts the type's records by declaration in the count tree (layout 5,
    /// ``CountTree/addRecords(_:indexedWith:schema:txn:)``) instead of keeping a signature entry per record.
    var countsDeclarations = false
    /// Where `meta` says whether the type keeps its update order (``UpdateOrder``): nil in a store of a layout before
    /// 6, whose types all keep it. (Held by ``Opened``: a copy of the schema retains nothing more for it.)
    var unorderedMarker: (meta: Database, key: [UInt8])? { opened.unorderedMarker }

    var signature: UInt64 { opened.signature }
    /// ``signature``'s key in the signature database.
    var signatureKey: [UInt8] { opened.signatureKey }
    /// The bytes the type's declaration counters start with (``CountTree/declarationCountPrefix(type:)``).
    var declarationCountPrefix: [UInt8] { opened.declarationCountPrefix }
    /// The counter of the records indexed with this declaration.
    var declarationCountKey: [UInt8] { opened.declarationCountKey }

    init(
        name: String, number: UInt32, records: Database, updated: Database, expiry: Database,
        signatures: Database, counts: Database?, indexes: [Index], allIndexes: [Index],
        declarationSignatures: [UInt64], declaration: IndexDeclaration, version: Int, runtime: SchemaRuntime,
        unorderedMarker: (meta: Database, key: [UInt8])? = nil
    ) {
        opened = Opened(
            name: name, number: number, records: records, updated: updated, expiry: expiry,
            signatures: signatures, counts: counts, indexes: indexes, allIndexes: allIndexes,
            declarationSignatures: declarationSignatures, declaration: declaration, version: version,
            runtime: runtime, unorderedMarker: unorderedMarker)
    }

    /// The index called `name`, or nil.
    func index(named name: String) -> Index? { indexes.first { $0.name == name } }

    /// The error for a type whose databases do not fit beside the store's other types'.
    static func noRoom(for info: TypeInfo) -> LocalStorageError {
        .invalidDeclaration(
            "type \"\(info.name)\" needs \(info.databaseCount) databases (4 + \(info.slots.count) indexes), but a "
                + "process can open at most \(Environment.maxDatabases) per store and the store's other types use "
                + "the rest: at most \(Int(Environment.maxDatabases) - Environment.storeDatabases) in all, each "
                + "type 4 + its indexes (for example \(Environment.typesOfSixteenIndexes) types of 16 indexes)")
    }

    /// Opens the databases of `info`'s type for `declaration`, whose slots `info` must hold.
    ///
    /// With `create`, missing databases are created (a write transaction); without, a missing one throws.
    /// - Throws: `invalidDeclaration` when the process cannot open that many databases.
    static func open(
        _ info: TypeInfo, declaration: IndexDeclaration, version: Int, in txn: Transaction,
        create: Bool
    ) throws -> TypeSchema {
        func open(_ dbName: String, sortedDuplicates: Bool = true) throws -> Database {
            do {
                guard let dbi = try txn.openDatabase(dbName, sortedDuplicates: sortedDuplicates, create: create) else {
                    throw LocalStorageError.decodingFailed(
                        reason: "the store lacks database \(dbName) of type \(info.name); it is damaged")
                }
                return dbi
            } catch let error as LMDBError where error.isDatabasesFull {
                throw noRoom(for: info)
            }
        }
        let n = info.number
        var byNumber: [UInt32: Index] = [:]
        var all: [Index] = []
        for slot in info.slots {
            let index = Index(
                name: slot.name, nameBytes: Array(slot.name.utf8), kind: slot.kind, slot: slot.number,
                dbi: try open("i.\(n).\(slot.number)"),
                counterPrefix: CountTree.counterPrefix(type: n, slot: slot.number))
            byNumber[slot.number] = index
            all.append(index)
        }
        var indexes: [Index] = []
        for entry in declaration.entries {
            guard let slot = info.slot(named: entry.name, kind: entry.kind), let index = byNumber[slot.number] else {
                throw LocalStorageError.decodingFailed(
                    reason: "the store's description of type \(info.name) has no slot for index \(entry.name)")
            }
            indexes.append(index)
        }
        let records = try open("r.\(n)", sortedDuplicates: false)
        let (updated, expiry, signatures) = (try open("u.\(n)"), try open("e.\(n)"), try open("s.\(n)"))
        do {
            try Environment.checkTypeRoots(number: n, names: databaseNames(of: info), in: txn)
        } catch let damage as DamagedDataFile {
            throw LocalStorageError.decodingFailed(reason: "the databases of type \(info.name) are damaged: \(damage)")
        }
        let counts = try txn.openDatabase(CountTree.databaseName, sortedDuplicates: false, create: false)
        let meta = try txn.openDatabase(TypeRegistry.metaName, create: false)
        let layout = try meta.flatMap { try TypeRegistry.storedLayout(meta: $0, txn: txn) } ?? 0
        var schema = TypeSchema(
            name: info.name, number: n, records: records,
            updated: updated, expiry: expiry,
            signatures: signatures, counts: counts,
            indexes: indexes, allIndexes: all,
            declarationSignatures: info.declarations.map(\.signature), declaration: declaration,
            version: version, runtime: SchemaRuntime(),
            unorderedMarker: meta.flatMap { meta in
                layout >= TypeRegistry.updateOrderOnDemandLayout ? (meta, UpdateOrder.markerKey(type: n)) : nil
            })
        schema.countsDeclarations = meta != nil && counts != nil && layout >= TypeRegistry.declarationCountsLayout
        return schema
    }

    /// Whether the type keeps its update order (``UpdateOrder``) in `txn`'s snapshot. A read asks `meta` each time (a
    /// snapshot from before the order was built must not walk it); a write trusts a read, or a committed build, that
    /// found it kept, as a type never stops keeping it.
    func keepsUpdateOrder(_ txn: Transaction) throws -> Bool {
        guard let marker = unorderedMarker else { return true }
        if !txn.isReadOnly, runtime.keepsUpdateOrder.load(ordering: .relaxed) { return true }
        let kept = try txn.get(marker.meta, key: marker.key) == nil
        if kept, txn.isReadOnly { runtime.keepsUpdateOrder.store(true, ordering: .relaxed) }
        return kept
    }

    /// Opens the databases of a type known only from `meta` (purges, maintenance), with the declaration
    /// registered last; in a read-only transaction nothing is created.
    static func open(_ info: TypeInfo, in txn: Transaction) throws -> TypeSchema {
        try open(
            info, declaration: IndexDeclaration(entries: info.indexes), version: info.version, in: txn,
            create: !txn.isReadOnly)
    }

    /// The names of the databases of the type `info` describes.
    static func databaseNames(of info: TypeInfo) -> [String] {
        let n = info.number
        return ["r.\(n)", "u.\(n)", "e.\(n)", "s.\(n)"] + info.slots.map { "i.\(n).\($0.number)" }
    }

    /// The open databases of each type of `infos`, leaving out a type whose databases are damaged (a root page
    /// fails its check): work over every type (eviction under a store limit, the expiry sweep, the totals a
    /// commit on the map's reserve compares, statistics) goes on for the others. Each damaged type is logged
    /// once per environment; its own reads and writes still fail with `decodingFailed` naming it.
    static func openUndamaged(
        _ infos: [TypeInfo], in txn: Transaction, logger: (any StorageLogger)?
    ) throws -> [TypeSchema] {
        var schemas: [TypeSchema] = []
        schemas.reserveCapacity(infos.count)
        for info in infos {
            do {
                try Environment.checkTypeRoots(number: info.number, names: databaseNames(of: info), in: txn)
            } catch let damage as DamagedDataFile {
                if Environment.noteDamagedType(info.number, in: txn) {
                    logger?.log(
                        level: .error,
                        message: "The databases of a type are damaged: work over every type leaves it out",
                        metadata: ["type": info.name, "problem": damage.problem])
                }
                continue
            }
            schemas.append(try open(info, in: txn))
        }
        return schemas
    }

    // MARK: - Entries of records indexed with other declarations

    /// The indexes that may hold entries of a record indexed with `signature`: every index of the type.
    ///
    /// A declaration this schema has not seen (registered since, perhaps by another process) is looked up
    /// in `meta` inside `txn`, and its databases opened there.
    func indexesHolding(signature: UInt64, txn: Transaction) throws -> [Index] {
        if knownSignatures.contains(signature) { return allIndexes }
        return try current(in: txn)?.allIndexes ?? allIndexes
    }

    /// The indexes a record indexed with `signature` has entries in (its declaration's), or nil when that
    /// declaration is not recorded.
    func declaredIndexes(signature: UInt64, txn: Transaction) throws -> [Index]? {
        if signature == self.signature { return indexes }
        guard let info = try currentInfo(in: txn), let slots = info.slots(ofSignature: signature),
            let schema = try current(info, in: txn)
        else { return nil }
        return slots.compactMap { slot in schema.allIndexes.first { $0.slot == slot.number } }
    }

    /// The signature a record indexed with `signature` is stored with here: its own when `meta` describes that
    /// declaration in `txn`, else ``IndexDeclaration/unknownSignature`` (its entries are then the newest
    /// declaration's, and every declaration's app re-indexes it). For records this store did not index itself:
    /// imports and the shared tier's replicas.
    func storedSignature(for signature: UInt64, txn: Transaction) throws -> UInt64 {
        if signature == self.signature || signature == IndexDeclaration.unknownSignature
            || knownSignatures.contains(signature)
        {
            return signature
        }
        let described = try currentInfo(in: txn)?.slots(ofSignature: signature) != nil
        return described ? signature : IndexDeclaration.unknownSignature
    }

    /// This type as `meta` describes it now, opened in `txn` (creating nothing), or nil when `meta` has
    /// no description.
    func current(in txn: Transaction) throws -> TypeSchema? {
        try currentInfo(in: txn).flatMap { try current($0, in: txn) }
    }

    private func current(_ info: TypeInfo, in txn: Transaction) throws -> TypeSchema? {
        try TypeSchema.open(info, declaration: declaration, version: version, in: txn, create: false)
    }

    private func currentInfo(in txn: Transaction) throws -> TypeInfo? {
        // `meta` is the store's first database; opening it again returns the handle this process has.
        guard let meta = try txn.openDatabase(TypeRegistry.metaName, create: false),
            let bytes = try txn.get(meta, key: TypeInfo.key(name))
        else { return nil }
        // A re-index of records of an undescribed declaration asks once per record (review-69 #6): the description
        // is decoded again only when its bytes changed.
        if let known = runtime.describedAs(bytes) { return known }
        let info = try TypeRegistry.decode(bytes, name: name)
        runtime.noteDescription(bytes, as: info)
        return info
    }
}
