/// An index value as maintenance output shows it: a string or an exact number.
///
/// In JSON a string is a string and a number is a number, written exactly (integers beyond 2^53 keep
/// every digit); the infinities, which JSON cannot spell, are the strings `"Infinity"` and
/// `"-Infinity"` (`"+Infinity"` is read too, as older exports wrote it).
@_spi(Maintenance) public enum MaintenanceIndexValue: Codable, Sendable, Equatable, CustomStringConvertible {
    /// A string index value.
    case string(String)
    /// An integer number.
    case integer(Int64)
    /// An integer number above `Int64.max`.
    case unsignedInteger(UInt64)
    /// Any other number.
    case double(Double)

    /// How infinities are spelled in output (and the JSON view of payloads): `Infinity`, `-Infinity`.
    static let positiveInfinity = "Infinity"
    static let negativeInfinity = "-Infinity"

    /// The value as text: a string as it is, a number as Swift prints it, infinities as `Infinity` and
    /// `-Infinity` (the spelling `--where` accepts).
    public var description: String {
        switch self {
        case .string(let string): string
        case .integer(let value): String(value)
        case .unsignedInteger(let value): String(value)
        case .double(let value) where value == .infinity: Self.positiveInfinity
        case .double(let value) where value == -.infinity: Self.negativeInfinity
        case .double(let value): value.description
        }
    }

    /// Encodes the value as a JSON string or number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let string): try container.encode(string)
        case .integer(let value): try container.encode(value)
        case .unsignedInteger(let value): try container.encode(value)
        case .double(let value) where value == .infinity: try container.encode(Self.positiveInfinity)
        case .double(let value) where value == -.infinity: try container.encode(Self.negativeInfinity)
        case .double(let value): try container.encode(value)
        }
    }

    /// Decodes a JSON string or number, keeping integers exact.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Probing kinds in turn: each failed decode only means "not this kind"; the last one throws.
        if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .unsignedInteger(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    /// The value of a record header's stored bytes; nil when a number's bytes are not a valid key.
    init?(kind: IndexKind, stored: UnsafeRawBufferPointer) {
        switch kind {
        case .string:
            self = .string(String(decoding: stored, as: UTF8.self))
        case .number:
            guard let number = OrderedKey.decodeNumber(stored) else { return nil }
            switch number {
            case .int(let value): self = .integer(value)
            case .uint(let value): self = .unsignedInteger(value)
            case .double(let value): self = .double(value)
            }
        }
    }

    /// The bytes a record header stores for this value in an index of `kind`; nil when it does not fit.
    func storedBytes(kind: IndexKind) -> [UInt8]? {
        switch (kind, self) {
        case (.string, .string(let string)): return Array(string.utf8)
        case (.string, _): return nil
        case (.number, .integer(let value)): return OrderedKey.encodeNumber(.int(value))
        case (.number, .unsignedInteger(let value)): return OrderedKey.encodeNumber(.uint(value))
        case (.number, .double(let value)): return OrderedKey.encodeNumber(.double(value))
        case (.number, .string(let text)): return Self.number(parsing: text)?.storedBytes(kind: .number)
        }
    }

    /// Parses a number as a command line or an export spells it: an integer, a decimal, `true`/`false`
    /// (indexed as 1 and 0) or an infinity (`Infinity`, `+Infinity`, `-Infinity`, `inf`, `-inf`, in any
    /// case). Nil for anything else, NaN included (NaN is never indexed).
    static func number(parsing text: String) -> MaintenanceIndexValue? {
        if let value = Int64(text) { return .integer(value) }
        if let value = UInt64(text) { return .unsignedInteger(value) }
        switch text.lowercased() {
        case "true": return .integer(1)
        case "false": return .integer(0)
        case "infinity", "+infinity", "inf", "+inf": return .double(.infinity)
        case "-infinity", "-inf": return .double(-.infinity)
        default: break
        }
        guard let value = Double(text), value.isFinite else { return nil }
        return .double(value)
    }
}
