import Foundation

/// A JSON document, read exactly enough to compare ids and index values with it.
enum JSONValue: Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsignedInteger(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

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

    /// A whole number in `UInt64`'s range, or nil.
    var unsignedValue: UInt64? {
        switch self {
        case .integer(let value): UInt64(exactly: value)
        case .unsignedInteger(let value): value
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

extension JSONValue {
    /// The error of JSON text that is not one JSON value.
    struct SyntaxError: Error, CustomStringConvertible {
        /// What is wrong.
        let reason: String
        /// The byte offset where it was found.
        let offset: Int

        var description: String { "\(reason) at byte \(offset)" }
    }

    /// Deepest nesting of arrays and objects read (as `JSONDecoder`'s limit), so that hostile text cannot
    /// exhaust the stack.
    static let maximumDepth = 512

    /// Parses `text` as one JSON value, read as `JSONDecoder` reads it into a `Decodable` that tries each kind in
    /// turn (null, Bool, Int64, UInt64, Double, String, array, object): a number whose value is a whole number
    /// in `Int64`'s range is an integer (`2.5e1` is 25), above it in `UInt64`'s range an unsigned integer, any
    /// other a `Double`; a number beyond `Double`'s range is refused; the first of repeated keys counts; a comma
    /// before a closing bracket is allowed. One pass over the bytes, no `Codable` (decoding a payload through
    /// `JSONDecoder` and a `Decodable` of each kind in turn was most of an import's time).
    ///
    /// Where the two differ: a number's kind follows its exact decimal value, where `JSONDecoder` reads some
    /// through a `Double` first (`1.00000000000000000001` and `1e-400` are `Double`s here, integers there), which
    /// no encoder writes; and the value of a repeated name must be JSON too (`JSONDecoder` never reads it).
    ///
    /// - Throws: ``SyntaxError`` for anything else.
    static func parse(_ text: Data) throws -> JSONValue {
        try parseNotingNames(text).value
    }

    /// ``parse(_:)``, and whether every member name of the top-level object is written without an escape: then a
    /// member found by its name here is the one found by its bytes in the text (``JSONText/rangeOfMember(_:in:)``).
    static func parseNotingNames(_ text: Data) throws -> (value: JSONValue, namesAreLiteral: Bool) {
        try text.withUnsafeBytes { bytes in
            var parser = JSONValueParser(bytes: bytes)
            let value = try parser.parseDocument()
            return (value, !parser.escapedTopLevelName)
        }
    }
}

/// The one-pass reader of ``JSONValue/parse(_:)``.
private struct JSONValueParser {
    let bytes: UnsafeRawBufferPointer
    var position = 0
    /// Whether a member name of the top-level object was written with an escape.
    var escapedTopLevelName = false

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func parseDocument() throws -> JSONValue {
        let value = try parseValue(depth: 0)
        skipSpace()
        guard position == bytes.count else { throw error("unexpected text after the value") }
        return value
    }

    private func error(_ reason: String) -> JSONValue.SyntaxError {
        JSONValue.SyntaxError(reason: reason, offset: position)
    }

    private mutating func skipSpace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws -> JSONValue {
        skipSpace()
        guard position < bytes.count else { throw error("unexpected end of text") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectWord("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectWord("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectWord("null")
            return .null
        default: return try parseNumber()
        }
    }

    private mutating func expectWord(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count,
            UnsafeRawBufferPointer(start: word.utf8Start, count: count).elementsEqual(
                bytes[position..<position + count])
        else { throw error("invalid literal") }
        position += count
    }

    private mutating func parseObject(depth: Int) throws -> JSONValue {
        guard depth <= JSONValue.maximumDepth else { throw error("nesting too deep") }
        position += 1
        var members: [String: JSONValue] = [:]
        while true {
            skipSpace()
            guard position < bytes.count else { throw error("unexpected end of text in an object") }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            guard bytes[position] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let nameStart = position
            let name = try parseString()
            if depth == 1, !escapedTopLevelName, bytes[nameStart..<position].contains(UInt8(ascii: "\\")) {
                escapedTopLevelName = true
            }
            skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            let value = try parseValue(depth: depth)
            if members[name] == nil { members[name] = value }
            skipSpace()
            guard position < bytes.count else { throw error("unexpected end of text in an object") }
            switch bytes[position] {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"): continue
            default: throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws -> JSONValue {
        guard depth <= JSONValue.maximumDepth else { throw error("nesting too deep") }
        position += 1
        var elements: [JSONValue] = []
        while true {
            skipSpace()
            guard position < bytes.count else { throw error("unexpected end of text in an array") }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            elements.append(try parseValue(depth: depth))
            skipSpace()
            guard position < bytes.count else { throw error("unexpected end of text in an array") }
            switch bytes[position] {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"): continue
            default: throw error("expected ',' or ']'")
            }
        }
    }

    /// A string literal, unescaped; the text must be UTF-8 and every escape a whole scalar (no lone surrogate).
    private mutating func parseString() throws -> String {
        position += 1
        let start = position
        // The common case: no escape, so the literal's bytes are the string's.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let literal = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
                position += 1
                return try Self.string(literal, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("a control character in a string") }
            position += 1
        }
        var unescaped = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                return try unescaped.withUnsafeBytes { try Self.string($0, at: start) }
            case UInt8(ascii: "\\"):
                position += 1
                try parseEscape(into: &unescaped)
            default:
                guard byte >= 0x20 else { throw error("a control character in a string") }
                unescaped.append(byte)
                position += 1
            }
        }
        throw error("unexpected end of text in a string")
    }

    private static func string(_ utf8: UnsafeRawBufferPointer, at offset: Int) throws -> String {
        guard let string = String(validating: utf8, as: UTF8.self) else {
            throw JSONValue.SyntaxError(reason: "a string that is not UTF-8", offset: offset)
        }
        return string
    }

    private mutating func parseEscape(into unescaped: inout [UInt8]) throws {
        do {
            position = try JSONEscape.read(bytes, at: position, into: &unescaped)
        } catch {
            throw JSONValue.SyntaxError(reason: error.reason, offset: error.offset)
        }
    }

    /// A number in JSON's syntax (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
    private mutating func parseNumber() throws -> JSONValue {
        let start = position
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        // The significant digits (integer and fraction parts, leading zeros dropped) and how far the decimal
        // point sits from their end.
        var digits: [UInt8] = []
        var pointShift = 0
        let integerStart = position
        while position < bytes.count, Self.isDigit(bytes[position]) {
            if !(digits.isEmpty && bytes[position] == UInt8(ascii: "0")) { digits.append(bytes[position]) }
            position += 1
        }
        let integerDigits = position - integerStart
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else {
            throw error("an invalid number")
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            let fractionStart = position
            while position < bytes.count, Self.isDigit(bytes[position]) {
                if !(digits.isEmpty && bytes[position] == UInt8(ascii: "0")) { digits.append(bytes[position]) }
                pointShift -= 1
                position += 1
            }
            guard position > fractionStart else { throw error("an invalid number") }
        }
        var exponent = 0
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            var exponentNegative = false
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                exponentNegative = bytes[position] == UInt8(ascii: "-")
                position += 1
            }
            let exponentStart = position
            while position < bytes.count, Self.isDigit(bytes[position]) {
                // Beyond any Double's range either way; kept from overflowing.
                if exponent < 100_000 { exponent = exponent * 10 + Int(bytes[position] - UInt8(ascii: "0")) }
                position += 1
            }
            guard position > exponentStart else { throw error("an invalid number") }
            if exponentNegative { exponent = -exponent }
        }
        let text = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
        // Zeros after the last significant digit move into the scale: `1.50`, `100e-2` and `10` are read by value.
        while let last = digits.last, last == UInt8(ascii: "0") {
            digits.removeLast()
            pointShift += 1
        }
        let scale = pointShift + exponent
        if digits.isEmpty { return .integer(0) }
        if scale >= 0, digits.count + scale <= 20, let magnitude = Self.wholeNumber(digits, scale: scale) {
            if negative {
                if magnitude <= UInt64(Int64.max) { return .integer(-Int64(magnitude)) }
                if magnitude == UInt64(Int64.max) + 1 { return .integer(.min) }
            } else {
                if magnitude <= UInt64(Int64.max) { return .integer(Int64(magnitude)) }
                return .unsignedInteger(magnitude)
            }
        }
        guard let double = Double(String(decoding: text, as: UTF8.self)), double.isFinite else {
            throw JSONValue.SyntaxError(reason: "a number beyond a Double's range", offset: start)
        }
        return .double(double)
    }

    /// `digits` followed by `scale` zeros, when that fits a `UInt64`.
    private static func wholeNumber(_ digits: [UInt8], scale: Int) -> UInt64? {
        var value: UInt64 = 0
        for digit in digits {
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            value = sum
        }
        for _ in 0..<scale {
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = times
        }
        return value
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
