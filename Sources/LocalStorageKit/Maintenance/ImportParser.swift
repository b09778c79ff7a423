import Foundation

/// Turns the lines of an export file into type descriptions and records, and writes them.
struct ImportParser {
    /// One line's content.
    enum Item: Sendable {
        case type(TypeInfo)
        case record(type: String, key: [UInt8], header: RecordHeader, payload: [UInt8])
    }

    /// The types the store describes.
    private let known: [ExactName: TypeInfo]
    /// The types described so far: the store's own, and the file's type lines for the others.
    private var declarations: [ExactName: TypeInfo]
    /// The names of the types the file described, in file order.
    private(set) var typeNames: [String] = []
    private var typeNamesSeen: Set<ExactName> = []
    private var lineNumber = 0
    /// The line each record of the file was on, by type and id: a second line for one record is refused
    /// (it would replace the first, and the import would write fewer records than it read).
    private var recordLines: [ExactName: [ExactName: Int]] = [:]
    private let decoder = JSONDecoder()
    private let check: ImportRecordCheck

    init(known: [ExactName: TypeInfo], check: ImportRecordCheck = ImportRecordCheck()) {
        self.known = known
        declarations = known
        self.check = check
    }

    /// Parses the next line; nil for an empty line.
    ///
    /// - Throws: ``MaintenanceError/invalidImportLine(_:reason:)``.
    mutating func parse(_ line: ArraySlice<UInt8>) throws -> Item? {
        lineNumber += 1
        guard line.contains(where: { ![0x20, 0x09, 0x0D].contains($0) }) else { return nil }
        let bytes = Array(line)
        do {
            let data = Data(bytes)
            // A record line has an id; a type line none (a line that is neither fails to decode as a type).
            if !Self.hasID(bytes) {
                let description = try decoder.decode(TypeDescription.self, from: data)
                guard let info = description.typeInfo else { throw reason("an index kind is not string or number") }
                try IndexDeclaration(entries: info.indexes).validate(storageName: info.name, type: "type")
                // A type the store knows keeps its own description (the import does not replace it),
                // so its records are checked against that one.
                let name = ExactName(info.name)
                declarations[name] = known[name] ?? info
                if typeNamesSeen.insert(name).inserted { typeNames.append(info.name) }
                return .type(info)
            }
            // One pass of ``JSONValue/parse(_:)`` reads a well-formed line; anything else is read by
            // `JSONDecoder`, which either reads it too or says what is wrong with it (the error of this line).
            let (members, namesAreLiteral): ([String: JSONValue]?, Bool) =
                switch Result(catching: { try JSONValue.parseNotingNames(data) }) {
                case .success((.object(let members), let literal)): (members, literal)
                default: (nil, false)
                }
            let summary =
                try members.flatMap(RecordSummary.init(importing:))
                ?? decoder.decode(RecordSummary.self, from: data)
            let (type, id) = (ExactName(summary.type), ExactName(summary.id))
            if let first = recordLines[type]?[id] {
                throw reason("\(summary.type) \"\(summary.id)\" is already on line \(first)")
            }
            // The payload read with the line is the one stored only when no member name hides behind an escape
            // (`"p\u0061yload"`); otherwise the check reads the stored bytes again (review-86 #2).
            let item = try record(summary, line: bytes, payload: namesAreLiteral ? members?["payload"] : nil)
            recordLines[type, default: [:]][id] = lineNumber
            return item
        } catch let error as MaintenanceError {
            throw error
        } catch let error as DecodingError {
            throw reason("not a type or record line (\(Self.explain(error)))")
        } catch {
            throw reason("\(error)")
        }
    }

    /// Whether `line`, a JSON object, has a top-level "id" member that is not null.
    private static func hasID(_ line: [UInt8]) -> Bool {
        guard let range = JSONText.rangeOfMember("id", in: line) else { return false }
        return !line[range].elementsEqual("null".utf8)
    }

    /// The record of the line `summary` was read from; `document`, the value of the payload it stores, when the
    /// line was read whole (else the check reads the payload's bytes).
    private func record(_ summary: RecordSummary, line: [UInt8], payload document: JSONValue?) throws -> Item {
        guard let info = declarations[ExactName(summary.type)] else {
            throw reason("type \"\(summary.type)\" is neither described earlier in the file nor in the store")
        }
        guard let format = PayloadFormat(name: summary.format) else {
            throw reason("unknown payload format \"\(summary.format)\"")
        }
        guard let range = JSONText.rangeOfMember("payload", in: line) else {
            throw reason("the record has no payload")
        }
        let json = Data(line[range])
        let payload =
            try exactPayload(in: line, json: json, format: format)
            ?? PayloadCodec.payload(fromJSON: json, as: format)
        let problem =
            if let document {
                check.problem(with: summary, document: document, info: info)
            } else {
                check.problem(with: summary, payload: json, info: info)
            }
        if let problem {
            throw reason("\(summary.type) \"\(summary.id)\": \(problem)")
        }
        // A declaration holds at most 64 indexes: no record was ever indexed with more.
        guard summary.indexes.count <= IndexDeclaration.maxIndexes else {
            throw reason(
                "\(summary.type) \"\(summary.id)\": \(summary.indexes.count) index values; a declaration holds at most "
                    + "\(IndexDeclaration.maxIndexes) indexes")
        }
        var values: [StoredIndexValue] = []
        var remaining = summary.indexes
        for entry in info.indexes {
            guard let value = remaining.removeValue(forKey: entry.name) else { continue }
            values.append(try stored(value, name: entry.name, kind: entry.kind, of: summary))
        }
        // Values of indexes the declaration no longer has (a record indexed before a change) keep their own kind.
        for (name, value) in remaining.sorted(by: { $0.key < $1.key }) {
            let kind: IndexKind = if case .string = value { .string } else { .number }
            values.append(try stored(value, name: name, kind: kind, of: summary))
        }
        let header = RecordHeader(
            format: format, version: summary.version, createdAt: summary.createdAt,
            updatedAt: summary.updatedAt, expiresAt: summary.expiresAt ?? 0,
            signature: summary.signature, indexValues: values)
        return .record(
            type: summary.type, key: try RecordWriter.key(for: summary.id), header: header,
            payload: payload)
    }

    /// The stored payload a `binaryPayload` member carries (for payloads the JSON view does not restore byte
    /// for byte), checked against the line's payload JSON; nil when there is none.
    private func exactPayload(in line: [UInt8], json: Data, format: PayloadFormat) throws -> [UInt8]? {
        guard let range = JSONText.rangeOfMember(RecordDetail.exactPayloadKey, in: line) else { return nil }
        let key = RecordDetail.exactPayloadKey
        guard format == .binary else { throw reason("\"\(key)\" is only for records in the binary format") }
        let text: String
        do {
            text = try decoder.decode(String.self, from: Data(line[range]))
        } catch {
            throw reason("\"\(key)\" is not a string: \(error)")
        }
        guard let bytes = Data(base64Encoded: text) else { throw reason("\"\(key)\" is not a Base64 string") }
        let view: Data
        do {
            view = try bytes.withUnsafeBytes { try BinaryJSON.jsonView(fromBinary: $0).json }
        } catch {
            throw reason("\"\(key)\" is not a valid binary payload: \(error)")
        }
        guard view == json || Self.sameJSON(view, json) else {
            throw reason("\"\(key)\" and \"payload\" hold different values (edit neither, or remove \"\(key)\")")
        }
        return Array(bytes)
    }

    /// Whether two JSON texts hold the same value.
    private static func sameJSON(_ first: Data, _ second: Data) -> Bool {
        do {
            return try JSONValue.parse(first) == JSONValue.parse(second)
        } catch {
            return false
        }
    }

    private func stored(
        _ value: MaintenanceIndexValue, name: String, kind: IndexKind,
        of summary: RecordSummary
    ) throws -> StoredIndexValue {
        guard let bytes = value.storedBytes(kind: kind) else {
            throw reason(
                "\(summary.type) \"\(summary.id)\": the value \(value) of index \"\(name)\""
                    + " is not a \(kind.name)")
        }
        return StoredIndexValue(name: name, kind: kind, bytes: bytes)
    }

    private func reason(_ text: String) -> MaintenanceError {
        .invalidImportLine(lineNumber, reason: text)
    }

    private static func explain(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): "no \"\(key.stringValue)\""
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            (context.codingPath.map(\.stringValue) + [context.debugDescription]).joined(separator: ": ")
        @unknown default: "\(error)"
        }
    }

    // MARK: - Writing

    /// Writes a batch in one transaction: adds unknown types to `meta`, replaces records and their entries,
    /// and logs each record in the change log (so other processes, their change streams and memory tiers,
    /// see it).
    ///
    /// - Returns: The number of records written.
    static func apply(
        _ items: [Item], meta: Database, context: CommitQueue.Context, sealing: PayloadSealing? = nil
    ) throws -> Int {
        let txn = context.txn
        var schemas: [ExactName: TypeSchema] = [:]
        func schema(_ name: String) throws -> TypeSchema {
            if let schema = schemas[ExactName(name)] { return schema }
            guard let info = try TypeRegistry.info(named: name, meta: meta, txn: txn) else {
                throw MaintenanceError.invalidArgument("the store has no description of type \(name)")
            }
            var schema = try StoreCore.schema(for: info, in: txn)
            schema.sealing = sealing
            schemas[ExactName(name)] = schema
            return schema
        }
        var records = 0
        for item in items {
            switch item {
            case .type(let info):
                if try TypeRegistry.info(named: info.name, meta: meta, txn: txn) == nil {
                    _ = try TypeRegistry.register(
                        info.name, declaration: IndexDeclaration(entries: info.indexes),
                        version: info.version, meta: meta, txn: txn, mayRaiseLayout: { false })
                }
            case .record(let type, let key, let header, let payload):
                let schema = try schema(type)
                let replaces = try txn.get(schema.records, key: key) != nil
                try RecordWriter.restore(key: key, header: header, payload: payload, schema: schema, txn: txn)
                context.log(schema, replaces ? .updated : .inserted, id: key)
                records += 1
            }
        }
        return records
    }
}

extension RecordSummary {
    /// The summary a record line's members hold, read as `JSONDecoder` reads them into the synthesized
    /// `Decodable`; nil when a member is missing or of another kind (`JSONDecoder` then says which).
    init?(importing members: [String: JSONValue]) {
        guard case .string(let type)? = members["type"], case .string(let id)? = members["id"],
            case .string(let format)? = members["format"], case .integer(let createdAt)? = members["createdAt"],
            case .integer(let updatedAt)? = members["updatedAt"], case .integer(let version)? = members["version"],
            let signature = members["signature"]?.unsignedValue, case .object(let values)? = members["indexes"]
        else { return nil }
        var indexes: [String: MaintenanceIndexValue] = [:]
        for (name, value) in values {
            switch value {
            case .integer(let number): indexes[name] = .integer(number)
            case .unsignedInteger(let number): indexes[name] = .unsignedInteger(number)
            case .double(let number): indexes[name] = .double(number)
            case .string(let text): indexes[name] = .string(text)
            default: return nil
            }
        }
        self.type = type
        self.id = id
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        guard let version = Int(exactly: version) else { return nil }
        self.version = version
        self.format = format
        self.signature = signature
        self.indexes = indexes
        switch members["expiresAt"] {
        case nil, .null?: expiresAt = nil
        case .integer(let time)?: expiresAt = time
        default: return nil
        }
        switch members["sizeInBytes"] {
        case nil, .null?: sizeInBytes = nil
        case .integer(let size)?:
            guard let size = Int(exactly: size) else { return nil }
            sizeInBytes = size
        default: return nil
        }
        switch members["isExpired"] {
        case nil, .null?: isExpired = nil
        case .bool(let expired)?: isExpired = expired
        default: return nil
        }
    }
}
