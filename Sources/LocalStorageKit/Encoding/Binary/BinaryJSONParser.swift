/// Parses JSON text straight into a binary payload, for ``BinaryJSON/binary(fromJSON:)``.
///
/// Accepts any JSON value at the top level (as `JSONDecoder` does), rejects malformed text and
/// nesting deeper than ``BinaryFormat/maximumDepth``, and keeps the text of numbers that neither a
/// 64-bit integer nor a float64 holds exactly.
struct BinaryJSONParser {
    /// The JSON text.
    private let input: UnsafeRawBufferPointer
    /// The offset of the next byte to read.
    private var position = 0
    /// The unescaped bytes of the string being parsed.
    private var scratch: [UInt8] = []

    /// Creates a parser over `input`, which must stay valid while the parser is used.
    init(input: UnsafeRawBufferPointer) {
        self.input = input
    }

    /// Parses the whole input as one JSON value and returns its binary payload.
    mutating func parseDocument() throws -> [UInt8] {
        var writer = BinaryWriter(capacity: input.count + 8)
        writer.append(BinaryFormat.version)
        skipWhitespace()
        try parseValue(depth: 0, into: &writer)
        skipWhitespace()
        guard position == input.count else {
            throw Self.error("unexpected text after the JSON value", at: position)
        }
        return writer.bytes
    }

    // MARK: - Reading bytes

    /// Returns the byte at `position`, or `nil` at the end of the input.
    private func peek() -> UInt8? {
        position < input.count ? input[position] : nil
    }

    /// Skips JSON whitespace.
    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            position += 1
        }
    }

    /// Consumes `byte` or throws.
    private mutating func expect(_ byte: UInt8) throws {
        guard peek() == byte else {
            throw Self.error("expected '\(Character(Unicode.Scalar(byte)))'", at: position)
        }
        position += 1
    }

    /// Consumes the ASCII word `word` or throws.
    private mutating func expectWord(_ word: StaticString) throws {
        let bytes = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        for byte in bytes {
            try expect(byte)
        }
    }

    /// Returns a parse error at `position`.
    private static func error(_ reason: String, at position: Int) -> BinaryCodecError {
        BinaryCodecError("Invalid JSON at byte \(position): \(reason).")
    }

    // MARK: - Values

    /// Parses one value, nested `depth` containers deep.
    private mutating func parseValue(depth: Int, into writer: inout BinaryWriter) throws {
        guard let byte = peek() else {
            throw Self.error("unexpected end of input", at: position)
        }
        switch byte {
        case UInt8(ascii: "{"):
            try parseObject(depth: depth, into: &writer)
        case UInt8(ascii: "["):
            try parseArray(depth: depth, into: &writer)
        case UInt8(ascii: "\""):
            try parseString()
            scratch.withUnsafeBufferPointer { writer.writeString(utf8: $0) }
        case UInt8(ascii: "t"):
            try expectWord("true")
            writer.writeBool(true)
        case UInt8(ascii: "f"):
            try expectWord("false")
            writer.writeBool(false)
        case UInt8(ascii: "n"):
            try expectWord("null")
            writer.writeNil()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try parseNumber(into: &writer)
        default:
            throw Self.error("unexpected character", at: position)
        }
    }

    /// Parses an object into a map.
    private mutating func parseObject(depth: Int, into writer: inout BinaryWriter) throws {
        guard depth < BinaryFormat.maximumDepth else {
            throw Self.error("nesting deeper than \(BinaryFormat.maximumDepth)", at: position)
        }
        position += 1
        let header = writer.beginContainer(BinaryFormat.Tag.map)
        var count = 0
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
        } else {
            while true {
                skipWhitespace()
                guard peek() == UInt8(ascii: "\"") else {
                    throw Self.error("expected a key", at: position)
                }
                try parseString()
                scratch.withUnsafeBufferPointer { writer.writeKey(utf8: $0) }
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                try parseValue(depth: depth + 1, into: &writer)
                count += 1
                skipWhitespace()
                if peek() == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                break
            }
        }
        writer.endContainer(header: header, count: count)
    }

    /// Parses an array.
    private mutating func parseArray(depth: Int, into writer: inout BinaryWriter) throws {
        guard depth < BinaryFormat.maximumDepth else {
            throw Self.error("nesting deeper than \(BinaryFormat.maximumDepth)", at: position)
        }
        position += 1
        let header = writer.beginContainer(BinaryFormat.Tag.array)
        var count = 0
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
        } else {
            while true {
                skipWhitespace()
                try parseValue(depth: depth + 1, into: &writer)
                count += 1
                skipWhitespace()
                if peek() == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                try expect(UInt8(ascii: "]"))
                break
            }
        }
        writer.endContainer(header: header, count: count)
    }

    // MARK: - Strings

    /// Parses a string literal into `scratch` as unescaped UTF-8.
    private mutating func parseString() throws {
        position += 1
        scratch.removeAll(keepingCapacity: true)
        while true {
            guard let byte = peek() else {
                throw Self.error("unterminated string", at: position)
            }
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return
            case UInt8(ascii: "\\"):
                try parseEscape()
            case 0x00..<0x20:
                throw Self.error("unescaped control character in string", at: position)
            default:
                scratch.append(byte)
            }
        }
    }

    /// Parses the escape sequence after a backslash into `scratch`.
    private mutating func parseEscape() throws {
        do {
            position = try JSONEscape.read(input, at: position, into: &scratch)
        } catch {
            throw Self.error(error.reason, at: error.offset)
        }
    }

    // MARK: - Numbers

    /// Parses a number: an integer if it fits 64 bits, a float64 if that keeps its text, else decimal text.
    private mutating func parseNumber(into writer: inout BinaryWriter) throws {
        let start = position
        var isInteger = true
        while let byte = peek(), Self.isNumberByte(byte) {
            if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                isInteger = false
            }
            position += 1
        }
        let bytes = UnsafeRawBufferPointer(rebasing: input[start..<position])
        guard
            Self.isNumber(
                UnsafeBufferPointer(
                    start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    count: bytes.count))
        else {
            position = start
            throw Self.error("invalid number", at: position)
        }
        let text = BinaryReader.string(from: bytes)
        if isInteger {
            if text == "-0" {
                writer.writeDouble(-0.0)
            } else if let value = Int64(text) {
                writer.writeInt(value)
            } else if let value = UInt64(text) {
                writer.writeUInt(value)
            } else {
                writer.writeDecimalText(text)
            }
        } else if let value = Double(text), value.isFinite, value.description == text {
            writer.writeDouble(value)
        } else {
            writer.writeDecimalText(text)
        }
    }

    /// Returns whether `byte` can appear in a JSON number.
    private static func isNumberByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
            UInt8(ascii: "e"), UInt8(ascii: "E"):
            return true
        default:
            return false
        }
    }

    /// Returns whether `text` is exactly one number in JSON syntax: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    static func isNumber(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        func digits() -> Int {
            let start = index
            while index < text.count, text[index] >= UInt8(ascii: "0"), text[index] <= UInt8(ascii: "9") {
                index += 1
            }
            return index - start
        }
        if index < text.count, text[index] == UInt8(ascii: "-") {
            index += 1
        }
        guard index < text.count else {
            return false
        }
        if text[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            return false
        }
        if index < text.count, text[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else {
                return false
            }
        }
        if index < text.count, text[index] == UInt8(ascii: "e") || text[index] == UInt8(ascii: "E") {
            index += 1
            if index < text.count, text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() > 0 else {
                return false
            }
        }
        return index == text.count
    }
}
