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
        let document: JSONValue
        do {
            document = try JSONValue.parse(payload)
        } catch {
            return metadataProblem(with: summary, info: info) ?? "the payload is not valid JSON (\(error))"
        }
        return problem(with: summary, document: document, info: info)
    }

    /// ``problem(with:payload:info:)`` with the payload already read.
    func problem(with summary: RecordSummary, document: JSONValue, info: TypeInfo) -> String? {
        metadataProblem(with: summary, info: info) ?? payloadProblem(with: summary, document: document, info: info)
    }

    /// What is wrong with the record's version, times or index names, before its payload is looked at.
    private func metadataProblem(with summary: RecordSummary, info: TypeInfo) -> String? {
        guard summary.version >= 1 else { return "version \(summary.version) is below 1" }
        // Times before 1970 sort after every other in the time-keyed databases (their keys are the times' bits):
        // such a record would be expired to reads yet never purged, and counted by queries.
        guard summary.createdAt >= 0, summary.updatedAt >= 0 else {
            return "createdAt \(summary.createdAt) or updatedAt \(summary.updatedAt) is before 1970"
        }
        if let expiresAt = summary.expiresAt, expiresAt < 1 {
            return "expiresAt \(expiresAt) is not a time after 1970 (leave it out for a record that never expires)"
        }
        let declared = Self.declaredKinds(info)
        if summary.signature == info.signature {
            for name in summary.indexes.keys.sorted() where declared[name] == nil {
                let known = info.indexes.map(\.name)
                return "index \"\(name)\" is not declared by type \"\(info.name)\""
                    + (known.isEmpty ? " (it has none)" : " (it has: \(known.joined(separator: ", ")))")
            }
        }
        return nil
    }

    /// The kinds of `info`'s indexes by name.
    private static func declaredKinds(_ info: TypeInfo) -> [String: IndexKind] {
        Dictionary(info.indexes.map { ($0.name, $0.kind) }, uniquingKeysWith: { first, _ in first })
    }

    /// What is wrong with the record's payload, `document`, as a record of `info`.
    private func payloadProblem(with summary: RecordSummary, document: JSONValue, info: TypeInfo) -> String? {
        let declared = Self.declaredKinds(info)
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
