import Foundation

extension StoreMaintenance {
    /// Checks the whole store in one snapshot.
    ///
    /// First every database and page reference of the data file, with plain reads (``DataFileWalk``):
    /// when they are damaged, the report lists that damage alone, as LMDB cannot be trusted with the file.
    /// Every record's header must parse and its payload turn into JSON; every index, update-time and expiry
    /// entry must name an existing record whose header holds that value; every record's values must be in
    /// the indexes of its declaration (a record of a declaration the store does not describe, an import's or a
    /// replica's, only in those that hold it: its app re-indexes it before any indexed read). Complexity: O(records + entries), each with a B-tree lookup; memory stays small.
    /// - Throws: ``LocalStorageError`` when the store cannot be read (problems in the data are reported).
    public func verify(progress: MaintenanceProgressHandler? = nil) throws -> VerifyReport {
        // First the pages, read without LMDB: its trees are read only when every page reference is sound.
        let environment = self.environment
        let catalog = currentCatalog
        let unreadable = catalog.unreadable.map { name in
            VerifyProblem(
                type: name, id: nil, kind: .unreadableType,
                detail: catalog.newer.contains(name)
                    ? "its description in meta cannot be read: it is well-formed, most likely written by a newer "
                        + "version of LocalStorageKit; it and its records are left untouched"
                    : "its description in meta cannot be read")
        }
        let damage = try read { txn in try environment.pageProblems(in: txn) }
        if !damage.isEmpty {
            // A type's databases are named by numbers in the file (`r.5`): the report names them as `stats` does too
            // (trial88 #5: only OnDiskFormat says what `r.5` is).
            var shown: [String: String] = [:]
            for type in catalog.sortedTypes {
                for (role, _) in Self.databases(of: type.schema) {
                    shown[role.databaseName(typeNumber: type.schema.number)] = "\(type.info.name)/\(role.name)"
                }
            }
            // The types whose descriptions cannot be read are named too: a repair refuses to lose one that looks
            // newer, and the report said nothing of them (trial89 #2).
            return VerifyReport(
                types: catalog.types.count, records: 0, entries: 0,
                problems: damage.map { problem in
                    var problem = problem
                    if let name = shown[problem.database] { problem.database += " (\(name))" }
                    return VerifyProblem(type: "data.mdb", id: nil, kind: .damagedFile, detail: "\(problem)")
                } + unreadable, repairedTypes: [], removedRecords: [])
        }
        var report = VerifyReport(
            types: catalog.types.count, records: 0, entries: 0, problems: unreadable, repairedTypes: [],
            removedRecords: [])
        try read { txn in
            let total = try catalog.sortedTypes.reduce(0) { sum, type in
                try Self.databases(of: type.schema).reduce(sum) { $0 + (try txn.entryCount($1.dbi)) }
            }
            var checker = Checker(txn: txn, meta: meta, progress: progress, total: total)
            for type in catalog.sortedTypes {
                let before = checker.problems.count
                try checker.checkRecords(of: type)
                for database in Self.databases(of: type.schema).dropFirst() {
                    try checker.checkEntries(of: database, in: type)
                }
                // Counts are checked where the records and entries are sound: a damaged record's size is
                // unknown, and broken entries are rebuilt (counts with them) by the same repair.
                if checker.problems.count == before {
                    checker.problems += try Self.countProblems(of: type.schema, txn: txn)
                }
            }
            report.records = checker.records
            report.entries = checker.entries
            report.problems += checker.problems
        }
        return report
    }

    /// The counters of a type's count tree against the entries they count. (The payload-byte total is not
    /// checked: a record damaged on disk changes its size behind the total's back; `repair` recounts it.)
    static func countProblems(of schema: TypeSchema, txn: Transaction) throws -> [VerifyProblem] {
        guard let counts = schema.counts else { return [] }
        var problems: [VerifyProblem] = []
        for index in schema.allIndexes {
            let expected = try CountTree.expectedCounters(index, counts: counts, txn: txn)
            let stored = try CountTree.storedCounters(index, counts: counts, txn: txn)
            if expected != stored {
                let wrong = Set(expected.keys).union(stored.keys).filter { expected[$0] != stored[$0] }.count
                problems.append(
                    VerifyProblem(
                        type: schema.name, id: nil, kind: .wrongCount,
                        detail: "\(wrong) counter(s) of index \(index.name)'s count tree differ from its entries"))
            }
        }
        if schema.countsDeclarations {
            // From layout 5 on, the declarations are counted, not listed: entries left there are stale.
            let leftover = try txn.entryCount(schema.signatures)
            if leftover > 0 {
                problems.append(
                    VerifyProblem(
                        type: schema.name, id: nil, kind: .wrongCount,
                        detail:
                            "\(leftover) signature entr\(leftover == 1 ? "y" : "ies") in a store that counts declarations"
                    ))
            }
            let expected = try CountTree.walkedDeclarationCounts(schema: schema, txn: txn)
            let stored = try CountTree.declarationCounts(schema: schema, txn: txn)
            let counted = Dictionary(uniqueKeysWithValues: stored.map { ($0.signature, $0.count) })
            if counted != expected {
                let wrong = Set(counted.keys).union(expected.keys).filter { counted[$0] != expected[$0] }.sorted()
                let detail = wrong.map { "\($0): \(counted[$0] ?? 0) counted, \(expected[$0] ?? 0) in headers" }
                problems.append(
                    VerifyProblem(
                        type: schema.name, id: nil, kind: .wrongCount,
                        detail: "the records counted by declaration differ from what their headers say ("
                            + detail.joined(separator: "; ") + ")"))
            }
            // The records no declaration counts (checked, like the rest, only while no record is damaged): too many
            // would let removals of damaged records skip the recount they need (review-70 #3).
            let uncounted = try CountTree.uncountedRecords(schema: schema, txn: txn)
            let walkedUncounted = try txn.entryCount(schema.records) - expected.values.reduce(0, +)
            if uncounted != walkedUncounted {
                problems.append(
                    VerifyProblem(
                        type: schema.name, id: nil, kind: .wrongCount,
                        detail: "\(uncounted) record(s) counted as uncountable, \(walkedUncounted) in headers"))
            }
        }
        return problems
    }

    /// Removes every record whose bytes cannot be read (``VerifyProblem/Kind/damagedRecord``,
    /// ``VerifyProblem/Kind/undecodablePayload``) with its entries (recounting its type's payload bytes),
    /// then rebuilds the index, update-time and expiry entries and the counts of every type `verify` finds
    /// inconsistent, from the values stored in the record headers (one transaction per type), then verifies
    /// again.
    ///
    /// A data file whose pages are damaged is not edited in place: the report lists the damage, and
    /// ``salvage(directory:)`` (with no process holding the store open) copies what can be read into a
    /// fresh store.
    /// - Returns: The report of the check after the repair, naming the repaired types and removed records.
    public func repair(progress: MaintenanceProgressHandler? = nil) async throws -> VerifyReport {
        var before = try verify(progress: progress)
        if before.problems.contains(where: { $0.kind == .damagedFile }) { return before }
        let unreadable = before.problems.filter { [.damagedRecord, .undecodablePayload].contains($0.kind) }
        var removed: [VerifyProblem] = []
        for problem in unreadable {
            guard let id = problem.id, !removed.contains(where: { $0.type == problem.type && $0.id == id }) else {
                continue
            }
            do {
                try await delete(problem.type, id: id)
            } catch MaintenanceError.recordNotFound {
                // Its key is not UTF-8 (its id names another key): it stays, and the report after says so; the
                // repair goes on rather than stop with half its work committed.
                continue
            }
            removed.append(problem)
        }
        if !removed.isEmpty { before = try verify(progress: progress) }
        let names = Set(before.problems.filter(\.isFixedByReindexing).map(\.type))
        let schemas = currentCatalog.sortedTypes.map(\.schema).filter { names.contains($0.name) }
        // A removed record took out of its type's payload-byte total what its damaged bytes counted, not
        // what it had added: the total is recounted from the records left (rebuilt types recount anyway).
        let recounted = currentCatalog.sortedTypes.map(\.schema).filter { schema in
            !names.contains(schema.name) && removed.contains { $0.type == schema.name }
        }
        try await write { writer in
            for schema in schemas {
                try writer.transact { context in try RecordWriter.rebuildEntries(of: schema, txn: context.txn) }
            }
            for schema in recounted {
                try writer.transact { context in try CountTree.recountPayloadBytes(schema: schema, txn: context.txn) }
            }
        }
        var after = try verify(progress: progress)
        after.repairedTypes = schemas.map(\.name)
        after.removedRecords = removed
        return after
    }

    /// What one database of a type holds.
    enum Role {
        case records
        case updated
        case expiry
        case signatures
        case index(TypeSchema.Index)
    }

    /// A type's databases: the records first, then update times, expiry times, signatures and every index
    /// the type ever declared.
    static func databases(of schema: TypeSchema) -> [(database: Role, dbi: Database)] {
        [
            (.records, schema.records), (.updated, schema.updated), (.expiry, schema.expiry),
            (.signatures, schema.signatures),
        ]
            + schema.allIndexes.map { (.index($0), $0.dbi) }
    }
}

extension StoreMaintenance.StoredType {
    /// The indexes a record indexed with `signature` has entries in: its declaration's as `info` (the type's
    /// description in the snapshot being checked) has it, or nil for a declaration it does not record (an import's
    /// or a replica's record of the unknown signature: it was given the entries of the declaration newest when it
    /// was written, which may since have changed, so only the entries it has can be checked; review-69 #6).
    func declaredIndexes(signature: UInt64, in info: TypeInfo) -> [TypeSchema.Index]? {
        guard let slots = info.slots(ofSignature: signature) else { return nil }
        return slots.compactMap { slot in schema.allIndexes.first { $0.slot == slot.number } }
    }
}

/// The checks of ``StoreMaintenance/verify(progress:)`` inside one read transaction.
private struct Checker {
    let txn: Transaction
    let meta: Database
    let progress: MaintenanceProgressHandler?
    let total: Int
    var records = 0
    var entries = 0
    var problems: [VerifyProblem] = []

    init(txn: Transaction, meta: Database, progress: MaintenanceProgressHandler?, total: Int) {
        self.txn = txn
        self.meta = meta
        self.progress = progress
        self.total = total
    }

    /// `type`'s description as this snapshot has it: compact headers of a declaration an app registered after the
    /// catalog was read name numbers only this one has.
    func described(_ type: StoreMaintenance.StoredType) throws -> TypeInfo {
        try StoreMaintenance.described(type, meta: meta, txn: txn)
    }

    private mutating func step() {
        if (records + entries) % 1024 == 0 {
            progress?(MaintenanceProgress(task: "verify", completed: records + entries, total: total))
        }
    }

    private mutating func report(_ schema: TypeSchema, _ id: String?, _ kind: VerifyProblem.Kind, _ detail: String) {
        problems.append(VerifyProblem(type: schema.name, id: id, kind: kind, detail: detail))
    }

    /// Each record: header, payload, and the presence of each entry it should have.
    mutating func checkRecords(of type: StoreMaintenance.StoredType) throws {
        let schema = type.schema
        let info = try described(type)
        let keepsUpdateOrder = try schema.keepsUpdateOrder(txn)
        try txn.withCursor(schema.records) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry {
                records += 1
                step()
                let key = Array(current.key)
                let id = StoreMaintenance.id(of: current.key)
                do {
                    let view = try RecordView(current.value)
                    // A compact header's declaration and slot numbers must name those of the type.
                    let header = try view.header(describedBy: info)
                    try checkPayload(of: view, schema: schema, id: id)
                    try checkEntriesExist(
                        for: view, signature: header.signature, key: key, id: id, type: type, info: info,
                        keepsUpdateOrder: keepsUpdateOrder)
                } catch let error as LocalStorageError {
                    let kind: VerifyProblem.Kind =
                        RecordView.newerLayout(of: current.value) == nil ? .damagedRecord : .newerRecord
                    report(schema, id, kind, "\(error)")
                }
                entry = try cursor.move(.next)
            }
        }
    }

    private mutating func checkPayload(of view: RecordView, schema: TypeSchema, id: String) throws {
        do {
            let opened = try RecordDecoding.payload(of: view, typeName: schema.name, id: id, sealing: schema.sealing)
            // NaN and ±Infinity are valid payloads.
            let json = try StoreMaintenance.jsonView(of: opened.bytes, format: view.format).json
            _ = try JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed])
        } catch {
            if PayloadSealing.isUnopened(view, typeName: schema.name, id: id, sealing: schema.sealing) {
                report(schema, id, .sealNotOpened, StoreMaintenance.sealNotOpenedDetail)
                return
            }
            report(schema, id, .undecodablePayload, "the \(view.format.name) payload cannot be read as JSON: \(error)")
        }
    }

    private mutating func checkEntriesExist(
        for view: RecordView, signature: UInt64, key: [UInt8], id: String,
        type: StoreMaintenance.StoredType, info: TypeInfo, keepsUpdateOrder: Bool
    ) throws {
        let schema = type.schema
        if keepsUpdateOrder, try !hasEntry(RecordWriter.timeKey(view.updatedAt), key, in: schema.updated) {
            report(schema, id, .missingEntry, "no update-time entry for \(view.updatedAt)")
        }
        if view.expiresAt != 0, try !hasEntry(RecordWriter.timeKey(view.expiresAt), key, in: schema.expiry) {
            report(schema, id, .missingEntry, "no expiry entry for \(view.expiresAt)")
        }
        if !schema.countsDeclarations, try !hasEntry(RecordWriter.signatureKey(signature), key, in: schema.signatures) {
            report(schema, id, .missingEntry, "no signature entry for \(signature)")
        }
        for index in type.declaredIndexes(signature: signature, in: info) ?? [] {
            guard let stored = view.indexValue(of: index) else {
                // No value: the record is in the index under the "no value" key, as RecordWriter puts it.
                if try !hasEntry(IndexKeys.missing, key, in: index.dbi) {
                    report(schema, id, .missingEntry, "index \"\(index.name)\" has no \"no value\" entry for it")
                }
                continue
            }
            guard let value = MaintenanceIndexValue(kind: index.kind, stored: stored) else {
                report(schema, id, .damagedRecord, "its value of index \"\(index.name)\" is not a valid number key")
                continue
            }
            let indexKey = IndexValue.keyBytes(kind: index.kind, stored: stored)
            if try !hasEntry(indexKey, key, in: index.dbi) {
                report(schema, id, .missingEntry, "index \"\(index.name)\" has no entry for its value \(value)")
            }
        }
    }

    private func hasEntry(_ key: [UInt8], _ value: [UInt8], in dbi: Database) throws -> Bool {
        try txn.withCursor(dbi) { cursor in
            guard let found = try cursor.seek(atLeast: key, value: value) else { return false }
            return found.key.elementsEqual(key) && found.value.elementsEqual(value)
        }
    }

    /// Each entry of an update-time, expiry or index database: its record exists and holds its value.
    mutating func checkEntries(
        of database: (database: StoreMaintenance.Role, dbi: Database),
        in type: StoreMaintenance.StoredType
    ) throws {
        let schema = type.schema
        let info = try described(type)
        var unordered = false
        if case .updated = database.database { unordered = try !schema.keepsUpdateOrder(txn) }
        try txn.withCursor(database.dbi) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry {
                entries += 1
                step()
                let id = StoreMaintenance.id(of: current.value)
                let name = Self.name(of: database.database)
                if unordered {
                    report(schema, id, .mismatchedEntry, "\(name) entry, but the type keeps no update order")
                } else if let bytes = try txn.get(schema.records, key: current.value) {
                    // A damaged record (a compact header naming slots the type lacks included) is reported once, by
                    // checkRecords.
                    if case .readable(let view, let header) = try StoredRecord(bytes).header({
                        try $0.header(describedBy: info)
                    }) {
                        switch Self.key(
                            in: view, signature: header.signature, for: database.database, type: type, info: info)
                        {
                        case nil:
                            report(schema, id, .mismatchedEntry, "\(name) entry, but the record has no value there")
                        case let held? where !held.elementsEqual(current.key):
                            report(schema, id, .mismatchedEntry, "\(name) entry does not match the record's value")
                        default:
                            break
                        }
                    }
                } else {
                    report(schema, id, .danglingEntry, "\(name) entry points at no record")
                }
                entry = try cursor.move(.next)
            }
        }
    }

    /// The key a record's entry in `database` must have; nil when it should have none.
    private static func key(
        in view: RecordView, signature: UInt64, for database: StoreMaintenance.Role,
        type: StoreMaintenance.StoredType, info: TypeInfo
    ) -> [UInt8]? {
        switch database {
        case .records: return nil
        case .updated: return RecordWriter.timeKey(view.updatedAt)
        case .expiry: return view.expiresAt == 0 ? nil : RecordWriter.timeKey(view.expiresAt)
        case .signatures: return RecordWriter.signatureKey(signature)
        case .index(let index):
            // Only the indexes of the declaration the record was indexed with hold it; an entry of a record of an
            // undescribed declaration must hold its value.
            if let declared = type.declaredIndexes(signature: signature, in: info),
                !declared.contains(where: { $0.slot == index.slot })
            {
                return nil
            }
            guard let stored = view.indexValue(of: index) else { return IndexKeys.missing }
            return IndexValue.keyBytes(kind: index.kind, stored: stored)
        }
    }

    private static func name(of database: StoreMaintenance.Role) -> String {
        switch database {
        case .records: "record"
        case .updated: "an update-time"
        case .expiry: "an expiry"
        case .signatures: "a signature"
        case .index(let index): "an index \"\(index.name)\""
        }
    }
}
