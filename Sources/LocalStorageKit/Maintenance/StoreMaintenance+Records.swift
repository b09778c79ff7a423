import CLMDB
import Foundation

extension StoreMaintenance {
    // MARK: - Reading

    /// A page of a type's records with their metadata, served by the type's indexes.
    ///
    /// With conditions, the first condition's index finds the candidates and the others are checked
    /// against the header values; an order then sorts them. With only an order, the order's index is
    /// walked. Either way a record with no value for the order's index sorts first ascending and last
    /// descending, and ties break by id, as in the library's queries. Otherwise records are listed by id.
    /// Expired records are listed too, marked `isExpired`.
    ///
    /// Complexity: O(offset + limit) without conditions; O(candidates) with them.
    /// - Throws: ``MaintenanceError/unknownType(_:known:)``, ``MaintenanceError/unknownIndex(_:type:known:)``,
    ///   ``MaintenanceError/invalidArgument(_:)`` for a value that does not fit its index or a negative offset.
    public func list(_ typeName: String, query: ListQuery = ListQuery()) throws -> RecordListing {
        let type = try storedType(typeName)
        let schema = type.schema
        let conditionIndexes = try query.conditions.map { try indexes($0.index, of: schema) }
        let orderIndexes = try query.order.map { try indexes($0.index, of: schema) }
        guard query.offset >= 0 else {
            throw MaintenanceError.invalidArgument("the offset \(query.offset) is negative")
        }
        // Past Int.max, the end is the end of the records.
        var end = Int.max
        if let limit = query.limit, case (let sum, false) = query.offset.addingReportingOverflow(max(0, limit)) {
            end = sum
        }
        let now = clock.wallNanoseconds()
        return try read { txn in
            try checkPages(of: [type], in: txn)
            let conditions = try zip(query.conditions, conditionIndexes).map { condition, candidates in
                let index = try self.index(among: candidates, accepting: condition.value, of: type, txn: txn)
                let value =
                    index.kind == .string
                    ? MaintenanceIndexValue.string(condition.value)
                    : MaintenanceIndexValue.number(parsing: condition.value)
                guard let stored = value?.storedBytes(kind: index.kind) else {
                    throw MaintenanceError.invalidArgument(
                        "\"\(condition.value)\" is not a number; index \"\(index.name)\" holds numbers")
                }
                return (index, stored)
            }
            var order: (TypeSchema.Index, Bool)?
            if let requested = query.order, let candidates = orderIndexes {
                order = (try index(among: candidates, accepting: nil, of: type, txn: txn), requested.isDescending)
            }
            let queried = conditions.map(\.0) + (order.map { [$0.0] } ?? [])
            if let missing = try recordsMissing(from: queried, of: type, txn: txn) {
                throw MaintenanceError.notReindexed(type: type.info.name, index: missing.index, count: missing.count)
            }
            var keys: [[UInt8]] = []
            if let driving = conditions.first {
                let (first, stored) = driving
                let key = stored.withUnsafeBytes { IndexValue.keyBytes(kind: first.kind, stored: $0) }
                keys = try duplicates(of: key, in: first.dbi, txn: txn).filter { id in
                    guard let bytes = try txn.get(schema.records, key: id) else { return true }
                    guard case .readable(let view) = StoredRecord(bytes) else {
                        return true  // Listed as damaged below.
                    }
                    return conditions.allSatisfy { index, stored in
                        view.indexValue(of: index).map { $0.elementsEqual(stored) } ?? false
                    }
                }
                if let order {
                    keys = try sorted(keys, by: order.0, isDescending: order.1, schema: schema, txn: txn)
                }
                keys = Array(keys.prefix(end).dropFirst(query.offset))
            } else {
                // The order's index holds records without a value too (key `00 00`, before every value),
                // so its walk lists them first ascending and last descending.
                let dbi = order?.0.dbi ?? schema.records
                let isDescending = order?.1 ?? false
                try txn.withCursor(dbi) { cursor in
                    var position = 0
                    let step: CursorMove = isDescending ? .previous : .next
                    var entry = try cursor.move(isDescending ? .last : .first)
                    while let current = entry, position < end {
                        var run = [Array(order == nil ? current.key : current.value)]
                        let key = current.key
                        entry = try cursor.move(step)
                        // Values cut to the same key bytes: their order comes from the full values, as a query's.
                        if let index = order?.0, IndexKeys.isCut(key, kind: index.kind) {
                            while let next = entry, next.key.elementsEqual(key) {
                                run.append(Array(next.value))
                                entry = try cursor.move(step)
                            }
                            run = try sorted(run, by: index, isDescending: isDescending, schema: schema, txn: txn)
                        }
                        for id in run where position < end {
                            if position >= query.offset { keys.append(id) }
                            position += 1
                        }
                    }
                }
            }
            var listing = RecordListing(records: [], damaged: [])
            let info = try described(type, in: txn)
            for key in keys {
                let id = String(decoding: key, as: UTF8.self)
                guard let bytes = try txn.get(schema.records, key: key) else { continue }
                do {
                    let view = try RecordView(bytes)
                    listing.records.append(
                        try RecordSummary(type: schema.name, id: id, view: view, now: now, info: info))
                } catch {
                    listing.damaged.append(
                        VerifyProblem(
                            type: schema.name, id: id,
                            kind: RecordView.newerLayout(of: bytes) == nil ? .damagedRecord : .newerRecord,
                            detail: "\(error)"))
                }
            }
            return listing
        }
    }

    /// One record's metadata and its payload as JSON.
    ///
    /// - Throws: ``MaintenanceError/recordNotFound(type:id:)``; `decodingFailed` for a damaged record or a
    ///   payload that cannot be turned into JSON.
    public func record(_ typeName: String, id: String) throws -> RecordDetail {
        let type = try storedType(typeName)
        let schema = type.schema
        let key = try StoreMaintenance.mappingErrors { try RecordWriter.key(for: id) }
        let now = clock.wallNanoseconds()
        return try read { txn in
            try checkPages(of: [type], recordsOnly: true, in: txn)
            guard let bytes = try txn.get(schema.records, key: key) else {
                throw MaintenanceError.recordNotFound(type: schema.name, id: id)
            }
            // A damaged header's error does not name the record (export and salvage reports name it themselves).
            if case .damaged(.decodingFailed(let reason)) = StoredRecord(bytes) {
                throw LocalStorageError.decodingFailed(reason: "\(schema.name) \"\(id)\": \(reason)")
            }
            return try StoreMaintenance.detail(
                type: schema.name, id: id, bytes: bytes, now: now, sealing: schema.sealing,
                info: try described(type, in: txn))
        }
    }

    /// A record's summary and JSON payload; `now` adds the listing-only fields.
    static func detail(
        type: String, id: String, bytes: UnsafeRawBufferPointer, now: Int64?, sealing: PayloadSealing?,
        info: TypeInfo
    ) throws -> RecordDetail {
        let view = try RecordView(bytes)
        let payload: (json: Data, isExact: Bool)
        let opened = try RecordDecoding.payload(of: view, typeName: type, id: id, sealing: sealing).bytes
        do {
            payload = try jsonView(of: opened, format: view.format)
        } catch {
            throw LocalStorageError.decodingFailed(
                reason: "the \(view.format.name) payload of \(type) \"\(id)\" cannot be read: \(error)")
        }
        return RecordDetail(
            summary: try RecordSummary(type: type, id: id, view: view, now: now, info: info), payload: payload.json,
            exactPayload: payload.isExact ? nil : Data(opened))
    }

    /// The JSON view of a record's payload (NaN and ±Infinity as strings), and whether it is exact.
    /// A JSON payload is checked first (UTF-8 and JSON syntax): a damaged one must not reach a listing or an
    /// export as if it were JSON.
    static func jsonView(of payload: [UInt8], format: PayloadFormat) throws -> (json: Data, isExact: Bool) {
        switch format {
        case .json:
            guard String(validating: payload, as: UTF8.self) != nil else {
                throw BinaryCodecError("the JSON payload is not valid UTF-8")
            }
            _ = try BinaryJSON.binary(fromJSON: Data(payload))
            return (Data(payload), true)
        case .binary:
            return try payload.withUnsafeBytes { try BinaryJSON.jsonView(fromBinary: $0) }
        }
    }

    /// The indexes called `name`: every one a declaration of the type declared under that name (an app and its
    /// extension may index the type differently, even under one name with two kinds), the current declaration's
    /// last.
    private func indexes(_ name: String, of schema: TypeSchema) throws -> [TypeSchema.Index] {
        // The current declaration's last, so that it is the one taken among equals.
        let current = schema.index(named: name)
        let others = schema.allIndexes.filter { $0.name == name && $0.slot != current?.slot }
        let indexes = others + (current.map { [$0] } ?? [])
        guard !indexes.isEmpty else {
            var known = schema.indexes.map(\.name)
            for index in schema.allIndexes where !known.contains(index.name) { known.append(index.name) }
            throw MaintenanceError.unknownIndex(name, type: schema.name, known: known)
        }
        return indexes
    }

    /// Of `candidates`, indexes of one name, the one to list by: of those whose kind can hold `value` (a number
    /// index cannot hold text), the one the fewest records are missing from, the newest of equals.
    /// ``recordsMissing(from:of:txn:)`` then tells whether every record is in it.
    private func index(
        among candidates: [TypeSchema.Index], accepting value: String?, of type: StoredType, txn: Transaction
    ) throws -> TypeSchema.Index {
        guard let newest = candidates.last else { throw MaintenanceError.invalidArgument("no index to list by") }
        guard candidates.count > 1 else { return newest }
        let fitting = candidates.filter { index in
            index.kind == .string || value.map { MaintenanceIndexValue.number(parsing: $0) != nil } ?? true
        }
        var best: (index: TypeSchema.Index, missing: Int)?
        for index in fitting {
            let missing = try recordsMissing(from: [index], of: type, txn: txn)?.count ?? 0
            if best.map({ missing <= $0.missing }) ?? true { best = (index, missing) }
        }
        return best?.index ?? newest
    }

    /// How many records of `type` were indexed under a declaration that lacks one of `indexes` (or that `meta`
    /// does not describe), and the first such index: they have no entries there until the app re-indexes them.
    /// Nil when every record is in every one of `indexes`.
    ///
    /// Complexity: O(declarations the type's records were indexed with).
    func recordsMissing(
        from indexes: [TypeSchema.Index], of type: StoredType, txn: Transaction
    ) throws -> (index: String, count: Int)? {
        guard !indexes.isEmpty else { return nil }
        // The declarations as this snapshot describes them: one an app registered since the catalog was read
        // has the indexes it has, not none.
        let declarations = try described(type, in: txn).declarations
        var missing: (index: String, count: Int)?
        if type.schema.countsDeclarations {
            // The current declaration too: an index of another declaration is not one of its.
            for (signature, count) in try CountTree.declarationCounts(schema: type.schema, txn: txn) {
                let declaration = declarations.first { $0.signature == signature }
                if let index = indexes.first(where: { declaration?.slots.contains($0.slot) != true }) {
                    missing = (missing?.index ?? index.name, (missing?.count ?? 0) + count)
                }
            }
            return missing
        }
        try txn.withCursor(type.schema.signatures) { cursor in
            var entry = try cursor.move(.first)
            while let current = entry {
                let declaration = declarations.first {
                    RecordWriter.signatureKey($0.signature).elementsEqual(current.key)
                }
                if let index = indexes.first(where: { declaration?.slots.contains($0.slot) != true }) {
                    missing = (missing?.index ?? index.name, (missing?.count ?? 0) + (try cursor.duplicateCount()))
                }
                entry = try cursor.move(MDB_NEXT_NODUP)
            }
        }
        return missing
    }

    /// How many records of `schema` were indexed under another declaration than its current one.
    func notReindexed(_ schema: TypeSchema, txn: Transaction) throws -> Int {
        if schema.countsDeclarations { return try CountTree.recordsOfOtherDeclarations(schema: schema, txn: txn) }
        let current = try txn.withCursor(schema.signatures) { cursor in
            try cursor.seek(atLeast: schema.signatureKey).map { entry in
                entry.key.elementsEqual(schema.signatureKey) ? try cursor.duplicateCount() : 0
            } ?? 0
        }
        return try txn.entryCount(schema.signatures) - current
    }

    /// The ids stored under `key` in a sorted-duplicates database, in id order.
    private func duplicates(of key: [UInt8], in dbi: Database, txn: Transaction) throws -> [[UInt8]] {
        try txn.withCursor(dbi) { cursor in
            var ids: [[UInt8]] = []
            var entry = try cursor.seek(atLeast: key)
            while let current = entry, current.key.elementsEqual(key) {
                ids.append(Array(current.value))
                entry = try cursor.move(.next)
            }
            return ids
        }
    }

    /// `keys` ordered by their records' values of `index` (no value first), ties by id.
    private func sorted(
        _ keys: [[UInt8]], by index: TypeSchema.Index, isDescending: Bool, schema: TypeSchema,
        txn: Transaction
    ) throws -> [[UInt8]] {
        // Ranked by index key, then (for string values cut to the same key) by the full value, then by id.
        let ranked = try keys.map { key -> (value: [UInt8], full: [UInt8], key: [UInt8]) in
            // A damaged record sorts as one with no value; the listing reports it as damaged.
            guard let bytes = try txn.get(schema.records, key: key), case .readable(let view) = StoredRecord(bytes),
                let value = view.indexValue(of: index)
            else {
                return ([], [], key)
            }
            return (IndexValue.keyBytes(kind: index.kind, stored: value), Array(value), key)
        }
        let ascending = ranked.sorted {
            if $0.value != $1.value { return $0.value.lexicographicallyPrecedes($1.value) }
            if $0.full != $1.full { return $0.full.lexicographicallyPrecedes($1.full) }
            return $0.key.lexicographicallyPrecedes($1.key)
        }.map(\.key)
        return isDescending ? ascending.reversed() : ascending
    }

    // MARK: - Writing

    /// Deletes one record and its index entries.
    ///
    /// A record whose header is damaged is deleted too; its index entries are found by walking the type's
    /// entry databases. Apps observing the type hear of it through the change log.
    /// - Throws: ``MaintenanceError/recordNotFound(type:id:)``.
    public func delete(_ typeName: String, id: String) async throws {
        let type = try storedType(typeName)
        let schema = type.schema
        try checkPages(of: [type])  // A delete walks the record's index entries and counters.
        let key = try StoreMaintenance.mappingErrors { try RecordWriter.key(for: id) }
        let deleted = try await write { writer in
            try writer.transact { context in try RecordWriter.delete(id: id, key: key, schema: schema, context: context)
            }
        }
        if !deleted { throw MaintenanceError.recordNotFound(type: schema.name, id: id) }
    }

    /// Deletes every record of a type with all its index entries, in one transaction; returns how many.
    public func clear(_ typeName: String) async throws -> Int {
        let type = try storedType(typeName)
        let schema = type.schema
        try checkPages(of: [type])  // LMDB reads every page of a database it drops.
        return try await write { writer in
            try writer.transact { context in
                let count = try context.txn.entryCount(schema.records)
                try RecordWriter.clear(schema: schema, context: context)
                return count
            }
        }
    }

    /// Deletes the expired records of one type, or of every type, in bounded transactions.
    ///
    /// - Returns: How many records were deleted, per type name.
    public func purgeExpired(
        _ typeName: String? = nil,
        progress: MaintenanceProgressHandler? = nil
    ) async throws -> [String: Int] {
        let types = try typeName.map { [try storedType($0)] } ?? currentCatalog.sortedTypes
        let schemas = types.map(\.schema)
        let now = clock.wallNanoseconds()
        let total = try read { txn in
            try checkPages(of: types, in: txn)
            return try schemas.reduce(0) { $0 + (try RecordReader.expiredKeys(schema: $1, now: now, txn: txn).count) }
        }
        return try await write { writer in
            var purged: [String: Int] = [:]
            var done = 0
            for schema in schemas {
                var count = 0
                var removingEndedLeases = true
                while true {
                    let removing = removingEndedLeases
                    let (batch, endedLeases) = try writer.transact { context in
                        // The leases and remembered nils of the type's loads that ended go too, as many at a time.
                        let endedLeases =
                            removing
                            ? try LeaseBook.removeEnded(
                                now: context.leaseNow, type: schema.number, limit: StoreMaintenance.batchSize,
                                txn: context.txn) : 0
                        let batch = try RecordWriter.purgeExpired(
                            schema: schema, now: context.now,
                            limit: StoreMaintenance.batchSize, context: context)
                        return (batch, endedLeases)
                    }
                    removingEndedLeases = endedLeases == StoreMaintenance.batchSize
                    count += batch.purged
                    done += batch.purged
                    progress?(MaintenanceProgress(task: "purge", completed: done, total: total))
                    if batch.examined < StoreMaintenance.batchSize && !removingEndedLeases { break }
                }
                // Two types whose names differ only in Unicode normalization share one key: it adds both.
                purged[schema.name, default: 0] += count
            }
            return purged
        }
    }

    /// Records per write transaction for purges, repairs and imports.
    static var batchSize: Int { 10_000 }
}

extension StoreMaintenance {
    /// `type`'s description as `txn`'s snapshot has it, or the catalog's when the snapshot has none: the compact
    /// headers of a declaration an app registered after the catalog was read name numbers only the snapshot has.
    func described(_ type: StoredType, in txn: Transaction) throws -> TypeInfo {
        try Self.described(type, meta: meta, txn: txn)
    }

    /// ``described(_:in:)`` with `meta`'s handle. A description the snapshot cannot read (written since by a newer
    /// version) leaves the catalog's: the type was readable when the catalog was read, and the records it numbers
    /// are reported as they are met.
    static func described(_ type: StoredType, meta: Database, txn: Transaction) throws -> TypeInfo {
        do {
            return try TypeRegistry.info(named: type.info.name, meta: meta, txn: txn) ?? type.info
        } catch LocalStorageError.decodingFailed {
            return type.info
        }
    }
}
