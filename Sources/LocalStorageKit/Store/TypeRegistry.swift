import Foundation

/// Reads and writes the type descriptions in `meta`: type and index numbers, declarations, versions.
///
/// Every change is a read-modify-write inside the caller's write transaction, so two processes
/// registering declarations of one type never lose each other's numbers (LMDB has one writer at a time).
enum TypeRegistry {
    /// The name of the database holding the type descriptions.
    static let metaName = "meta"
    /// The on-disk layout this version writes: 3 added the count tree (``CountTree``), 4 the compact record
    /// header (``RecordLayout/compact``, which a version of layout 3 cannot read), 5 the declaration counters
    /// in place of a signature entry per record. Layout 2 is read (read-only stores count by walking) and
    /// upgraded when opened for writing; so are layouts 3 and 4 (the marker, and the signature entries turned
    /// into counters; records keep their headers until rewritten), 6 the update order kept only for the types that
    /// ask for it (``UpdateOrder``; an older version would miss records of a type without one). A store of layout 5
    /// becomes 6 when an app registers a new type in it, not at an open: its types keep their order, and a version
    /// of layout 5 keeps opening it until then.
    static let layout = 6
    /// The first layout whose types keep their update order only once asked for it (``UpdateOrder``).
    static let updateOrderOnDemandLayout = 6
    /// The first layout whose stores may hold compact record headers.
    static let compactHeadersLayout = 4
    /// The first layout that counts the records of each declaration (``CountTree/addRecords(_:indexedWith:schema:txn:)``)
    /// and keeps no signature entries.
    static let declarationCountsLayout = 5
    /// The first layout with the count tree.
    static let countTreeLayout = 3
    /// The oldest layout this version opens.
    static let oldestLayout = 2
    static let layoutKey: [UInt8] = Array("layout".utf8)
    static let nextTypeKey: [UInt8] = Array("next.type".utf8)

    /// Checks the store's layout marker; on a new store (empty `meta`) writes it when `txn` can write. Returns
    /// the layout the store has now (this version's for a new store, or one upgraded).
    ///
    /// - Throws: `openFailed`'s reason as a `decodingFailed` when the store has another layout.
    ///
    /// An older store is upgraded to `target` at most (maintenance, which writes no compact header, stops at the
    /// count tree's layout).
    ///
    /// A new store gets its count tree unless `countTree` is false (benchmarks measure a store without one).
    ///
    /// A store of layout 2 is upgraded only when `mayUpgrade` allows it, asked inside this write transaction: the
    /// opener allows it when no other process has the store open (a process that opens it meanwhile waits for the
    /// commit, then finds layout 3). An older version that has it open goes on writing without the count tree, so
    /// an upgrade then would leave the tree's counts wrong; the store stays at layout 2 (counted by walking) until
    /// an open finds it alone.
    @discardableResult
    static func checkLayout(
        meta: Database, txn: Transaction, countTree: Bool = true, upgradeTo target: Int = layout,
        mayUpgrade: () -> Bool = { true }
    ) throws -> Int {
        if let stored = try txn.get(meta, key: layoutKey) {
            let found = try markedLayout(Array(stored)).get()
            // No open raises a store to layout 6: the first type registered in it does (``UpdateOrder``).
            var target = min(max(target, countTreeLayout), declarationCountsLayout)
            guard found < target && !txn.isReadOnly && mayUpgrade() else { return found }
            // A type it cannot read keeps the store at layout 2 (counts by walking), as review-68 #1 keeps 3 and 4.
            if found < countTreeLayout, try !upgradeToCountTree(meta: meta, txn: txn) { return found }
            if found < declarationCountsLayout, target >= declarationCountsLayout,
                try !upgradeToDeclarationCounts(meta: meta, txn: txn)
            {
                // A type it cannot convert keeps the store at the layout before (its reads fail as they did).
                target = declarationCountsLayout - 1
                guard found < target else { return found }
            }
            try txn.put(meta, key: layoutKey, value: Array("\(target)".utf8))
            return target
        }
        // Without a layout marker: LMDB's main database may hold only our own databases. Anything else is
        // another program's LMDB environment (one with a database named `meta` too), which must not be taken
        // over (this transaction is aborted).
        let foreign = try foreignNames(txn: txn)
        let isEmpty = try txn.withCursor(meta) { cursor in try cursor.move(.first) == nil }
        guard isEmpty || !foreign.isEmpty else {
            throw LocalStorageError.decodingFailed(
                reason: "the store was written by a development version of LocalStorageKit before 0.1.0 "
                    + "(no layout marker); export it with that version and import it into a new store")
        }
        if !foreign.isEmpty { throw foreignRefusal(foreign) }
        guard !txn.isReadOnly else { return layout }
        if countTree { _ = try txn.openDatabase(CountTree.databaseName, create: true) }
        try txn.put(meta, key: layoutKey, value: Array("\(layout)".utf8))
        return layout
    }

    /// Whether the store has this version's layout, or a marker ``checkLayout(meta:txn:countTree:upgradeTo:mayUpgrade:)``
    /// refuses in any transaction: false for a new store (no marker) and for an older layout.
    static func layoutIsCurrent(meta: Database, txn: Transaction) throws -> Bool {
        guard let stored = try txn.get(meta, key: layoutKey) else { return false }
        guard case .success(let found) = markedLayout(Array(stored)) else { return true }
        // An open upgrades a store to layout 5 at most (6 comes with a new type's registration).
        return found >= declarationCountsLayout
    }

    /// The layout a stored marker names, or why this version refuses the store: a damaged marker, a newer
    /// layout, one older than it reads. The open and compaction at open ask the same (a store the open refuses is
    /// never compacted first).
    static func markedLayout(_ marker: [UInt8]) -> Result<Int, LocalStorageError> {
        let text = String(decoding: marker, as: UTF8.self)
        guard let found = Int(text) else {
            return .failure(.decodingFailed(reason: "the store's layout marker \"\(text)\" is damaged"))
        }
        if found > layout {
            return .failure(
                .decodingFailed(
                    reason: "the store has layout \(found), written by a newer version of LocalStorageKit "
                        + "(this version reads layout \(layout)); it was left untouched"))
        }
        if found < oldestLayout {
            return .failure(.decodingFailed(reason: "the store has the older layout \(found)"))
        }
        return .success(found)
    }

    /// Why compaction must not rewrite a store whose layout marker is `marker`: none (another program's LMDB
    /// environment, or a store made before markers), or one ``markedLayout(_:)`` refuses.
    static func compactionRefusal(marker: [UInt8]?) -> String? {
        guard let marker else { return "not a LocalStorageKit store of this version (no layout marker)" }
        switch markedLayout(marker) {
        case .success: return nil
        case .failure(.decodingFailed(let reason)): return reason
        case .failure(let error): return "\(error)"
        }
    }

    /// The databases LocalStorageKit makes that belong to no type.
    static let storeWideNames = [
        metaName, ChangeLog.name, CountTree.databaseName, AccessIndex.byClockName, AccessIndex.byRecordName,
        LeaseBook.name, FrequencySketch.Layout.rows.databaseName, FrequencySketch.Layout.blocks.databaseName,
        AdaptiveQueues.byClockName, AdaptiveQueues.byRecordName, AdaptiveGhosts.byClockName,
        AdaptiveGhosts.byRecordName,
    ]

    /// Whether any type's records database holds a record: a walk of the main database's names (`r.` ‖ n),
    /// for the first open of a store with a key.
    static func holdsRecords(txn: Transaction) throws -> Bool {
        let names = try txn.withCursor(.main) { cursor in
            var names: [String] = []
            var entry = try cursor.seek(atLeast: Array("r.".utf8))
            while let current = entry, current.key.starts(with: Array("r.".utf8)) {
                names.append(String(decoding: current.key, as: UTF8.self))
                entry = try cursor.move(.next)
            }
            return names
        }
        for name in names where UInt32(name.dropFirst(2)) != nil {
            if let records = try txn.openDatabase(name, create: false), try txn.entryCount(records) > 0 { return true }
        }
        return false
    }

    /// Layout 2 → 3: builds the count tree of every index of every type from its entries, in the
    /// transaction that opens the store. O(entries), once. Returns false, before making the count tree's database
    /// (whose presence makes queries trust it), when a type's description or databases cannot be read: the store
    /// then stays at layout 2, as a damaged type must not keep the others' app from opening it (it failed every
    /// open; review-69 #6).
    private static func upgradeToCountTree(meta: Database, txn: Transaction) throws -> Bool {
        let (infos, unreadable) = try all(meta: meta, txn: txn)
        guard unreadable.isEmpty else { return false }
        for info in infos {
            do {
                _ = try TypeSchema.open(info, in: txn)
            } catch let error as LocalStorageError {
                guard case .decodingFailed = error else { throw error }
                return false
            }
        }
        _ = try txn.openDatabase(CountTree.databaseName, create: true)
        for info in infos {
            let schema = try TypeSchema.open(info, in: txn)
            guard let counts = schema.counts else { continue }
            for index in schema.allIndexes { try CountTree.rebuild(index, counts: counts, txn: txn) }
            try CountTree.recountPayloadBytes(schema: schema, txn: txn)
        }
        return true
    }

    /// Layout 3 or 4 → 5: counts each type's records by declaration from their headers (O(records), once: the
    /// signature entries could say how many, but not trustworthily which, and a counter too low under one
    /// declaration would hide a stale record from the re-index), then empties the signature database (O(its pages)).
    /// Returns false, changing nothing, when a type's description or databases cannot be read: the store then stays
    /// at its layout, as a damaged type must not keep the others' app from opening it.
    private static func upgradeToDeclarationCounts(meta: Database, txn: Transaction) throws -> Bool {
        let (infos, unreadable) = try all(meta: meta, txn: txn)
        guard unreadable.isEmpty else { return false }
        var schemas: [TypeSchema] = []
        for info in infos {
            do {
                var schema = try TypeSchema.open(info, in: txn)
                schema.countsDeclarations = true
                schemas.append(schema)
            } catch let error as LocalStorageError {
                guard case .decodingFailed = error else { throw error }
                return false
            }
        }
        for schema in schemas where schema.counts != nil {
            try CountTree.recountDeclarations(schema: schema, txn: txn)
            try txn.empty(schema.signatures)
        }
        return true
    }

    /// The layout marker of the store `meta` belongs to, or nil when it has none yet.
    static func storedLayout(meta: Database, txn: Transaction) throws -> Int? {
        try txn.get(meta, key: layoutKey).flatMap { Int(String(decoding: $0, as: UTF8.self)) }
    }

    /// The description of the type called `name`, or nil when `meta` has none.
    ///
    /// - Throws: `decodingFailed` when the description cannot be read: damaged, or written by a newer
    ///   version (an unknown index kind). Such a description is never overwritten.
    static func info(named name: String, meta: Database, txn: Transaction) throws -> TypeInfo? {
        guard let bytes = try txn.get(meta, key: TypeInfo.key(name)) else { return nil }
        return try decode(bytes, name: name)
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, name: String) throws -> TypeInfo {
        do {
            return try decodeDescription(bytes)
        } catch {
            throw LocalStorageError.decodingFailed(
                reason: "the store's description of type \"\(name)\" cannot be read: \(undecodable(error)); "
                    + "it was left untouched")
        }
    }

    /// A type's description, with the parser's or decoder's own error.
    static func decodeDescription(_ bytes: UnsafeRawBufferPointer) throws -> TypeInfo {
        // Read with the payload codec's JSON parser and decoder, not `JSONDecoder`: registering a type at
        // its first use after an open took about 55 µs with it, 40 µs without.
        var parser = BinaryJSONParser(input: bytes)
        let binary = try parser.parseDocument()
        return try binary.withUnsafeBytes { try BinaryDecoder().decode(TypeInfo.self, from: $0) }
    }

    /// Why a description cannot be read, from ``decodeDescription(_:)``'s error.
    static func undecodable(_ error: any Error) -> String {
        "it is damaged or was written by a newer version of LocalStorageKit (\(describe(error)))"
    }

    static func put(_ info: TypeInfo, meta: Database, txn: Transaction) throws {
        try txn.put(meta, key: TypeInfo.key(info.name), value: Array(try JSONEncoder().encode(info)))
    }

    /// Registers `declaration` of the type called `name`: allocates the type's number and a slot for
    /// each new (index, kind) pair, records the declaration by signature, and keeps the newest
    /// declaration as the one the CLI shows. Writes `meta` only when something changed.
    ///
    /// - Returns: The description now in `meta`, and the one before (nil for a new type).
    ///
    /// A new type keeps no update order (``UpdateOrder``) in a store of layout 6, or of layout 5 when
    /// `mayRaiseLayout()` allows raising it to 6 (an app's registration while no other process has the store open,
    /// never the maintenance tool's).
    static func register(
        _ name: String, declaration: IndexDeclaration, version: Int, meta: Database,
        txn: Transaction, mayRaiseLayout: () -> Bool
    ) throws -> (info: TypeInfo, previous: TypeInfo?) {
        let previous = try info(named: name, meta: meta, txn: txn)
        let info = registering(
            declaration,
            in: try previous
                ?? TypeInfo(
                    name: name, number: try newTypeNumber(meta: meta, txn: txn, mayRaiseLayout: mayRaiseLayout),
                    indexes: [],
                    signature: declaration.signature, version: version, slots: [], declarations: []))
        let added = info.databaseCount - (previous?.databaseCount ?? 0)
        if added > 0 { try checkRoom(for: info, adding: added, txn: txn) }
        if info != previous { try put(info, meta: meta, txn: txn) }
        return (info, previous)
    }

    /// Throws `invalidDeclaration` unless the databases of every type the store holds, with `info`'s (a new type, or
    /// one with new index slots), fit in the databases a process can open on a store: the count of what this process
    /// opened alone let two processes register more types than any process, the CLI's included, could open again
    /// (trial107 A1).
    ///
    /// The types' databases are counted in the main database, which names every database of the store (a type's are
    /// created in the transaction that registers it), less the store-wide ones; those have room kept for all of them.
    private static func checkRoom(for info: TypeInfo, adding databases: Int, txn: Transaction) throws {
        var storeWide = 0
        for name in storeWideNames where try txn.get(.main, key: Array(name.utf8)) != nil { storeWide += 1 }
        let typeDatabases = try txn.entryCount(.main) - storeWide
        let needed = typeDatabases + databases + Environment.storeDatabases
        guard needed <= Int(Environment.maxDatabases) else {
            throw TypeSchema.noRoom(for: info)
        }
    }

    /// `info` with `declaration` registered: a slot for each (index, kind) pair it has none for, the
    /// declaration recorded by signature, and kept as the newest one. Equal to `info` when `meta` needs no
    /// write for this declaration.
    static func registering(_ declaration: IndexDeclaration, in info: TypeInfo) -> TypeInfo {
        var info = info
        var numbers: [UInt32] = []
        for entry in declaration.entries {
            if let slot = info.slot(named: entry.name, kind: entry.kind) {
                numbers.append(slot.number)
            } else {
                // Past every slot the type ever had, so that no slot is reused; a damaged description whose
                // largest number is near UInt32.max wraps around to the first free number instead of trapping.
                // UInt32.max is the payload-bytes counter's (CountTree+PayloadBytes), never an index's.
                let used = Set(info.slots.map(\.number))
                var number = (info.slots.map(\.number).max() ?? 0) &+ 1
                while number == 0 || number == UInt32.max || used.contains(number) { number &+= 1 }
                info.slots.append(TypeInfo.Slot(name: entry.name, kind: entry.kind, number: number))
                numbers.append(number)
            }
        }
        if !info.declarations.contains(where: { $0.signature == declaration.signature }) {
            info.declarations.append(TypeInfo.Declaration(signature: declaration.signature, slots: numbers))
        }
        info.indexes = declaration.entries
        info.signature = declaration.signature
        return info
    }

    /// Every readable type description, and the names (with the reason) of those that cannot be read.
    static func all(
        meta: Database, txn: Transaction
    ) throws
        -> (infos: [TypeInfo], unreadable: [(name: String, reason: String)])
    {
        try txn.withCursor(meta) { cursor in
            var infos: [TypeInfo] = []
            var unreadable: [(String, String)] = []
            var entry = try cursor.seek(atLeast: TypeInfo.keyPrefix)
            while let current = entry, current.key.starts(with: TypeInfo.keyPrefix) {
                let name = String(decoding: current.key.dropFirst(TypeInfo.keyPrefix.count), as: UTF8.self)
                do {
                    infos.append(try decode(current.value, name: name))
                } catch {
                    unreadable.append((name, "\(error)"))
                }
                entry = try cursor.move(.next)
            }
            return (infos, unreadable)
        }
    }

    /// A number for a type registered now, which keeps no update order yet (``UpdateOrder``).
    private static func newTypeNumber(
        meta: Database, txn: Transaction, mayRaiseLayout: () -> Bool
    ) throws -> UInt32 {
        let number = try allocateTypeNumber(meta: meta, txn: txn)
        try UpdateOrder.markNewType(number, meta: meta, txn: txn, mayRaiseLayout: mayRaiseLayout)
        return number
    }

    private static func allocateTypeNumber(meta: Database, txn: Transaction) throws -> UInt32 {
        var next: UInt32 = 1
        if let stored = try txn.get(meta, key: nextTypeKey) {
            guard stored.count == 4 else {
                throw LocalStorageError.decodingFailed(reason: "the store's type counter is damaged")
            }
            next = UInt32(littleEndian: stored.loadUnaligned(as: UInt32.self))
        }
        guard next < UInt32.max else {
            throw LocalStorageError.invalidDeclaration("the store has allocated every type number")
        }
        var bytes: [UInt8] = []
        bytes.appendLittleEndian(next + 1)
        try txn.put(meta, key: nextTypeKey, value: bytes)
        return next
    }

    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context),
            .valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
