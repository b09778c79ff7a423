import Foundation

/// The checks an import makes of one record line against its type, before anything is written.
///
/// The store knows a type only from its `meta` description (index names and kinds, signature, version),
/// not from app code, so a record is checked as far as that allows:
/// - the payload is a JSON object (unless `checkingPayloadValues` is off: a model with its own `encode(to:)`
///   may write a single value or a list), and the outer `id` equals its own `id` member when it has one (a
///   model may encode its id under another key);
/// - every index value names an index of the declaration the record says it was indexed with (the
///   type's current one, same signature), and has that index's kind;
/// - the version is at least 1 (a record may be above its type's stored version: that version moves only
///   once every record is migrated, and a read migrates one record at a time);
/// - its times are after 1970 (`expiresAt`, when present, at least 1 ns after);
/// - an index of the current declaration that the record has no value for is not a payload member holding a
///   value of its kind (the record would be missing from that index);
/// - an index value whose name is also a member of the payload (`price`, or `address.city` through
///   nested objects) agrees with that member when both are strings or both numbers (a `Bool` is 1 or 0;
///   a `Date` member, which `JSONEncoder` writes as seconds since 2001, matches the index's seconds
///   since 1970). Indexes computed differently from a member of the same name (`email.lowercased()`)
///   would disagree: `checkingPayloadValues: false` skips this one check.
struct ImportRecordCheck {
    /// Whether index values are compared with payload members of the same name.
    var checkingPayloadValues = true

    /// The problem with `summary`, whose payload's JSON view is `payload`, as a record of `info`; nil when
    /// there is none.
    func problem(with summary: RecordSummary, payload: Data, info: TypeInfo) -> String? {
        guard summary.version >= 1 else { return "version \(summary.version) is below 1" }
        // Times before 1970 sort after every other in the time-keyed databases (their keys are the times' bits):
        // such a record would be expired to reads yet never purged, and counted by queries.
        guard summary.createdAt >= 0, summary.updatedAt >= 0 else {
            return "createdAt \(summary.createdAt) or updatedAt \(summary.updatedAt) is before 1970"
        }
        if let expiresAt = summary.expiresAt, expiresAt < 1 {
            return "expiresAt \(expiresAt) is not a time after 1970 (leave it out for a record that never expires)"
        }
        let declared = Dictionary(info.indexes.map { ($0.name, $0.kind) }, uniquingKeysWith: { first, _ in first })
        if summary.signature == info.signature {
            for name in summary.indexes.keys.sorted() where declared[name] == nil {
                let known = info.indexes.map(\.name)
                return "index \"\(name)\" is not declared by type \"\(info.name)\""
                    + (known.isEmpty ? " (it has none)" : " (it has: \(known.joined(separator: ", ")))")
            }
        }
        let document: JSONValue
        do {
            document = try JSONDecoder().decode(JSONValue.self, from: payload)
        } catch {
            return "the payload is not valid JSON (\(error))"
        }
        // A model's payload is an object (its keyed container), unless its own `encode(to:)` writes a single
        // value or a list: `null`, an array or a scalar is refused unless the payload checks are off.
        guard case .object(let members) = document else {
            guard !checkingPayloadValues else {
                return "the payload is not a JSON object (a model's members); --no-payload-check imports it as it is"
            }
            return nil
        }
        if let payloadID = members["id"]?.identifierText, payloadID != summary.id {
            return "the record's id \"\(summary.id)\" differs from its payload's id \"\(payloadID)\""
        }
        guard checkingPayloadValues else { return nil }
        for (name, given) in summary.indexes.sorted(by: { $0.key < $1.key }) {
            guard let member = document.member(at: name) else { continue }
            // A number index's infinities are strings in the file ("Infinity"): compare them as numbers.
            var value = given
            if declared[name] == .number, case .string(let text) = given,
                let number = MaintenanceIndexValue.number(parsing: text)
            {
                value = number
            }
            if let disagreement = Self.disagreement(value, member) {
                return "index \"\(name)\" holds \(value) but the payload's \"\(name)\" is \(disagreement)"
                    + " (use --no-payload-check if the index is computed differently)"
            }
        }
        // Indexed with the current declaration, the record is in no index it leaves out: one whose payload
        // member holds a value of the index's kind would be missing from the index until it is saved again.
        guard summary.signature == info.signature else { return nil }
        for entry in info.indexes where summary.indexes[entry.name] == nil {
            guard let member = document.member(at: entry.name) else { continue }
            let holdsValue: Bool =
                switch (entry.kind, member) {
                case (.string, .string), (.number, .integer), (.number, .unsignedInteger), (.number, .double),
                    (.number, .bool):
                    true
                default: false
                }
            if holdsValue {
                return "index \"\(entry.name)\" has no value but the payload's \"\(entry.name)\" is \(member.text)"
                    + " (use --no-payload-check if the index leaves such values out)"
            }
        }
        return nil
    }

    /// The payload member's text when it contradicts the index value; nil when they agree or cannot be compared.
    private static func disagreement(_ value: MaintenanceIndexValue, _ member: JSONValue) -> String? {
        switch (value, member) {
        case (.string(let text), .string(let payload)):
            return text == payload ? nil : "\"\(payload)\""
        case (.string, _):
            return nil
        case (_, .string), (_, .null), (_, .array), (_, .object):
            return nil
        default:
            guard let index = value.storedBytes(kind: .number), let number = member.number else { return nil }
            if OrderedKey.encodeNumber(number) == index { return nil }
            // A Date member: JSONEncoder's seconds since 2001; the index holds seconds since 1970.
            let seconds: Double =
                switch number {
                case .int(let value): Double(value)
                case .uint(let value): Double(value)
                case .double(let value): value
                }
            if OrderedKey.encodeNumber(.double(seconds + Date.timeIntervalBetween1970AndReferenceDate)) == index {
                return nil
            }
            // A Float member: the payload shows the Float's shortest text (0.1), the index holds the Float widened
            // to a Double (0.10000000149011612).
            let single = Float(seconds)
            if single.isFinite, OrderedKey.encodeNumber(.double(Double(single))) == index {
                return nil
            }
            return member.text
        }
    }
}

/// A JSON document, read exactly enough to compare ids and index values with it.
enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsignedInteger(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Probing kinds in turn: each failed decode only means "not this kind"; the last one throws.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .unsignedInteger(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// The member named `name`, else the member the dotted path `name` leads to through nested objects.
    func member(at name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        if let member = members[name] { return member }
        var current = self
        for component in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard case .object(let nested) = current, let next = nested[String(component)] else { return nil }
            current = next
        }
        return current
    }

    /// A number (a Bool as 1 or 0), or nil.
    var number: NumericValue? {
        switch self {
        case .bool(let value): .int(value ? 1 : 0)
        case .integer(let value): .int(value)
        case .unsignedInteger(let value): .uint(value)
        case .double(let value): .double(value)
        default: nil
        }
    }

    /// The text an id stored as this value has: a string as it is, an integer in decimal; nil otherwise.
    var identifierText: String? {
        switch self {
        case .string(let value): value
        case .integer(let value): String(value)
        case .unsignedInteger(let value): String(value)
        default: nil
        }
    }

    /// The value as the message shows it.
    var text: String {
        switch self {
        case .null: "null"
        case .bool(let value): String(value)
        case .integer(let value): String(value)
        case .unsignedInteger(let value): String(value)
        case .double(let value): String(value)
        case .string(let value): "\"\(value)\""
        case .array: "an array"
        case .object: "an object"
        }
    }
}
