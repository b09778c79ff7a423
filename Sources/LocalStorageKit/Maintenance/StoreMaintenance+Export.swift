import Foundation

/// What `export` wrote.
@_spi(Maintenance) public struct ExportReport: Codable, Sendable {
    /// Types exported.
    public var types: Int
    /// Records exported.
    public var records: Int
    /// Records left out because they cannot be read, and types whose description cannot be read (no id):
    /// none of their records are exported.
    public var skipped: [VerifyProblem]
}

/// What `import` read.
@_spi(Maintenance) public struct ImportReport: Codable, Sendable {
    /// The types the file described.
    public var types: [String]
    /// Records imported (inserted or replaced).
    public var records: Int
}

extension StoreMaintenance {
    // MARK: - Export

    /// Writes types and records as JSON Lines, from one snapshot.
    ///
    /// Each type starts with a line describing it (`type`, `version`, `signature`, `indexes`), followed by
    /// one line per record, in id order: `type`, `id`, `createdAt`, `updatedAt`, `expiresAt` (ns since 1970;
    /// no `expiresAt` when it never expires), `version`, `format`, `signature`, `indexes`, then `binaryPayload`
    /// (the stored binary payload in Base64, only when its JSON would not restore it byte for byte: NaN and
    /// ±Infinity, which the JSON view shows as strings, or a float holding a whole number) and, last, `payload` as JSON, whatever codec wrote it. Records that cannot be
    /// read are left out and reported, and so are the types whose description cannot be read (with every
    /// type, or named).
    ///
    /// - Parameters:
    ///   - names: The types to export, each once however often it is named; empty for all.
    ///   - output: Receives the text in chunks of about a megabyte.
    /// - Throws: ``MaintenanceError/unknownType(_:known:)``; whatever `output` throws.
    public func export(
        types names: [String] = [], to output: (Data) throws -> Void,
        progress: MaintenanceProgressHandler? = nil
    ) throws -> ExportReport {
        var seen: Set<ExactName> = []
        let catalog = currentCatalog
        // A type whose description cannot be read is reported, not left out in silence.
        let unreadable = catalog.unreadable.filter { name in
            names.isEmpty || names.contains { ExactName($0) == ExactName(name) }
        }
        // `export A A` exports A once.
        let types =
            names.isEmpty
            ? catalog.sortedTypes
            : try names.filter { name in !unreadable.contains { ExactName($0) == ExactName(name) } }
                .map { try storedType($0) }.filter { seen.insert(ExactName($0.info.name)).inserted }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try read { txn in
            try checkPages(of: types, recordsOnly: true, in: txn)
            let total = try types.reduce(0) { $0 + (try txn.entryCount($1.schema.records)) }
            var report = ExportReport(
                types: types.count, records: 0,
                skipped: unreadable.map {
                    VerifyProblem(
                        type: $0, id: nil, kind: .unreadableType,
                        detail: "its description in meta cannot be read: none of its records were exported")
                })
            var buffer = Data()
            func emit(_ line: Data) throws {
                buffer.append(line)
                buffer.append(UInt8(ascii: "\n"))
                if buffer.count >= 1 << 20 {
                    try output(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            for type in types {
                let info = try described(type, in: txn)
                try emit(try encoder.encode(TypeDescription(info)))
                try txn.withCursor(type.schema.records) { cursor in
                    var entry = try cursor.move(.first)
                    while let current = entry {
                        let id = StoreMaintenance.id(of: current.key)
                        do {
                            let detail = try StoreMaintenance.detail(
                                type: type.info.name, id: id,
                                bytes: current.value, now: nil, sealing: type.schema.sealing, info: info)
                            try emit(try detail.jsonLine())
                            report.records += 1
                        } catch let error as LocalStorageError {
                            let kind = StoreMaintenance.problemKind(
                                of: current.value, type: type.info.name, id: id, sealing: type.schema.sealing)
                            report.skipped.append(
                                VerifyProblem(
                                    type: type.info.name, id: id, kind: kind,
                                    detail: "\(error)"))
                        }
                        progress?(MaintenanceProgress(task: "export", completed: report.records, total: total))
                        entry = try cursor.move(.next)
                    }
                }
            }
            if !buffer.isEmpty { try output(buffer) }
            return report
        }
    }

    // MARK: - Import

    /// Imports a file written by ``export(types:to:progress:)`` into this store, empty or not, all or nothing.
    ///
    /// Every line is checked before anything is written: its syntax, and each record against its type as
    /// far as the store's metadata allows (see ``ImportRecordCheck``: the payload's id, index names, kinds
    /// and values, the version). Then every record is written in **one** transaction, replacing records
    /// with the same type and id and keeping their timestamps, expiry, version and index values exactly;
    /// when anything fails, nothing of the import is written. A type the store does not know is added as
    /// the file describes it; a type it knows keeps its own description. A record exported with a
    /// `binaryPayload` is restored from it, byte for byte.
    ///
    /// - Parameter checkingPayloadValues: Compare index values with payload members of the same name.
    /// - Throws: ``MaintenanceError/invalidImportLine(_:reason:)`` naming the first bad line;
    ///   ``MaintenanceError/readOnly(path:)`` on a store this process cannot write.
    public func importRecords(
        from url: URL, checkingPayloadValues: Bool = true,
        progress: MaintenanceProgressHandler? = nil
    ) async throws -> ImportReport {
        // A pipe (or any stream) gives its bytes once: spool it into a file, which is read twice.
        let spool = try ImportSpool(url)
        let report: ImportReport
        do {
            report = try await importRecords(
                spooled: spool.file, size: spool.size, checkingPayloadValues: checkingPayloadValues,
                progress: progress)
        } catch {
            try spool.remove()
            throw error
        }
        try spool.remove()
        return report
    }

    /// ``importRecords(from:checkingPayloadValues:progress:)`` from a regular file, read twice.
    private func importRecords(
        spooled url: URL, size: Int?, checkingPayloadValues: Bool,
        progress: MaintenanceProgressHandler?
    ) async throws -> ImportReport {
        let known = currentCatalog.types.mapValues(\.info)
        let check = ImportRecordCheck(checkingPayloadValues: checkingPayloadValues)
        // First pass: check every line; nothing is written.
        var parser = ImportParser(known: known, check: check)
        var reader = try LineReader(url: url)
        defer { reader.close() }
        var read = 0
        while let line = try reader.nextLine() {
            if case .record = try parser.parse(line) { read += 1 }
            progress?(MaintenanceProgress(task: "check", completed: reader.bytesRead, total: size))
        }
        let typeNames = parser.typeNames
        // Second pass: one transaction, so that a failure leaves nothing of the import behind. The file is
        // read again inside it (the writer reruns the body after growing the map).
        let meta = self.meta
        let records = try await write { writer in
            try writer.transact { context in
                var parser = ImportParser(known: known, check: check)
                var lines = try LineReader(url: url)
                defer { lines.close() }
                var batch: [ImportParser.Item] = []
                var batchBytes = 0
                var records = 0
                while true {
                    let line = try lines.nextLine()
                    if let line, let item = try parser.parse(line) {
                        batch.append(item)
                        batchBytes += line.count
                    }
                    guard line == nil || batch.count >= StoreMaintenance.batchSize || batchBytes >= 32 << 20 else {
                        continue
                    }
                    records += try ImportParser.apply(batch, meta: meta, context: context, sealing: self.sealing)
                    batch.removeAll(keepingCapacity: true)
                    batchBytes = 0
                    progress?(MaintenanceProgress(task: "import", completed: lines.bytesRead, total: size))
                    if line == nil { break }
                }
                // Throwing here aborts the transaction: an import is whole or absent.
                guard records == read else { throw MaintenanceError.incompleteImport(read: read, written: records) }
                return records
            }
        }
        try await reloadCatalog()
        return ImportReport(types: typeNames, records: records)
    }
}

extension StoreMaintenance {
    /// How a record that could not be read is reported: damaged (its header), a sealed payload none of the
    /// keys given opens (never removed by maintenance), or a payload that does not read.
    static func problemKind(
        of bytes: UnsafeRawBufferPointer, type: String, id: String, sealing: PayloadSealing?
    ) -> VerifyProblem.Kind {
        guard let view = StoredRecord(bytes).view else {
            return RecordView.newerLayout(of: bytes) == nil ? .damagedRecord : .newerRecord
        }
        return PayloadSealing.isUnopened(view, typeName: type, id: id, sealing: sealing)
            ? .sealNotOpened : .undecodablePayload
    }

    /// What `verify`, `export` and a salvage say of a record whose sealed payload no key given opens.
    static let sealNotOpenedDetail =
        "its sealed payload opens with none of the keys given: sealed with another key (during a rotation, "
        + "pass the old one too: --previous-key-file), by a newer library, or altered; it is kept"
}
