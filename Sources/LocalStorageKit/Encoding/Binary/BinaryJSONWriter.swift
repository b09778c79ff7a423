import Foundation

/// Writes the JSON text of a binary payload, for ``BinaryJSON/jsonData(fromBinary:)``.
struct BinaryJSONWriter {
    /// The payload being converted.
    let reader: BinaryReader
    /// What to do with NaN and ±Infinity.
    let nonFinite: BinaryJSON.NonFiniteNumbers
    /// The JSON written so far.
    private(set) var output: [UInt8] = []
    /// Whether a non-finite number was written as a string.
    private(set) var replacedNonFinite = false

    /// Creates a writer for the payload `reader` reads.
    init(reader: BinaryReader, nonFinite: BinaryJSON.NonFiniteNumbers = .reject) {
        self.reader = reader
        self.nonFinite = nonFinite
        output.reserveCapacity(reader.count * 2)
    }

    /// Writes the value at `offset`, nested `depth` containers deep, and returns the offset after it.
    mutating func writeValue(at offset: Int, depth: Int) throws -> Int {
        let tag = try reader.tag(at: offset)
        switch tag {
        case BinaryFormat.Tag.null:
            append("null")
        case BinaryFormat.Tag.boolTrue:
            append("true")
        case BinaryFormat.Tag.boolFalse:
            append("false")
        case BinaryFormat.Tag.fixStringBase...BinaryFormat.Tag.fixStringMax, BinaryFormat.Tag.string:
            guard let utf8 = try reader.stringBytes(at: offset) else {
                throw BinaryCodecError.corrupt("expected a string", at: offset)
            }
            writeString(utf8)
        case BinaryFormat.Tag.binary:
            guard let bytes = try reader.binaryBytes(at: offset) else {
                throw BinaryCodecError.corrupt("expected binary data", at: offset)
            }
            output.append(UInt8(ascii: "\""))
            append(Data(bytes).base64EncodedString())
            output.append(UInt8(ascii: "\""))
        case BinaryFormat.Tag.array:
            return try writeArray(at: offset, depth: depth)
        case BinaryFormat.Tag.map:
            return try writeMap(at: offset, depth: depth)
        default:
            if nonFinite == .strings, let text = try nonFiniteText(at: offset) {
                output.append(UInt8(ascii: "\""))
                append(text)
                output.append(UInt8(ascii: "\""))
                replacedNonFinite = true
            } else {
                append(try BinaryJSON.jsonText(ofNumberAt: offset, in: reader))
            }
        }
        return try reader.skipValue(at: offset)
    }

    /// Writes the array at `offset` and returns the offset after it.
    private mutating func writeArray(at offset: Int, depth: Int) throws -> Int {
        let header = try reader.containerHeader(at: offset)
        guard depth < BinaryFormat.maximumDepth else {
            throw BinaryCodecError.corrupt("nesting deeper than \(BinaryFormat.maximumDepth)", at: offset)
        }
        output.append(UInt8(ascii: "["))
        var position = header.bodyStart
        for index in 0..<header.count {
            if index > 0 {
                output.append(UInt8(ascii: ","))
            }
            guard position < header.bodyEnd else {
                throw BinaryCodecError.corrupt("array holds fewer elements than its count", at: offset)
            }
            position = try writeValue(at: position, depth: depth + 1)
        }
        guard position == header.bodyEnd else {
            throw BinaryCodecError.corrupt("array length does not match its elements", at: offset)
        }
        output.append(UInt8(ascii: "]"))
        return position
    }

    /// Writes the map at `offset` and returns the offset after it.
    private mutating func writeMap(at offset: Int, depth: Int) throws -> Int {
        let header = try reader.containerHeader(at: offset)
        guard depth < BinaryFormat.maximumDepth else {
            throw BinaryCodecError.corrupt("nesting deeper than \(BinaryFormat.maximumDepth)", at: offset)
        }
        output.append(UInt8(ascii: "{"))
        var position = header.bodyStart
        for index in 0..<header.count {
            if index > 0 {
                output.append(UInt8(ascii: ","))
            }
            guard position < header.bodyEnd else {
                throw BinaryCodecError.corrupt("map holds fewer entries than its count", at: offset)
            }
            let key = try reader.length(at: position)
            writeString(reader.bytes(from: key.end, count: key.value))
            output.append(UInt8(ascii: ":"))
            position = try writeValue(at: key.end + key.value, depth: depth + 1)
        }
        guard position == header.bodyEnd else {
            throw BinaryCodecError.corrupt("map length does not match its entries", at: offset)
        }
        output.append(UInt8(ascii: "}"))
        return position
    }

    /// `"NaN"`, `"Infinity"` or `"-Infinity"` for a non-finite float at `offset`; nil for anything else.
    private func nonFiniteText(at offset: Int) throws -> String? {
        switch try reader.number(at: offset) {
        case .double(let value)?: BinaryJSON.nonFiniteText(value)
        case .float(let value)?: BinaryJSON.nonFiniteText(Double(value))
        default: nil
        }
    }

    /// Appends ASCII or UTF-8 text.
    private mutating func append(_ text: String) {
        output.append(contentsOf: text.utf8)
    }

    /// Writes a JSON string literal, escaping like `JSONEncoder` with `.withoutEscapingSlashes` (as the CLI
    /// writes everything else: a `Data` member's Base64, written from its bytes, kept its slashes while the
    /// same text in a string did not, so an export of an imported export differed) and repairing invalid UTF-8.
    private mutating func writeString(_ utf8: UnsafeRawBufferPointer) {
        output.append(UInt8(ascii: "\""))
        for byte in BinaryReader.string(from: utf8).utf8 {
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case 0x08: append("\\b")
            case 0x0C: append("\\f")
            case UInt8(ascii: "\n"): append("\\n")
            case UInt8(ascii: "\r"): append("\\r")
            case UInt8(ascii: "\t"): append("\\t")
            case 0x00..<0x20:
                append("\\u00")
                let digits = Array("0123456789abcdef".utf8)
                output.append(digits[Int(byte >> 4)])
                output.append(digits[Int(byte & 0x0F)])
            default:
                output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
