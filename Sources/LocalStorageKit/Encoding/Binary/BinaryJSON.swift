import Foundation

/// Converts between binary payloads and JSON without knowing the Swift type they hold.
///
/// The CLI and migrations use it to show and rewrite records; a payload written by `JSONEncoder`
/// can be turned into a binary one that ``BinaryDecoder`` decodes like `JSONDecoder` would.
enum BinaryJSON {
    /// Returns the JSON for a binary payload, the bytes `JSONEncoder` (default strategies) would
    /// have written for the same value: no whitespace, keys in payload order, `/` escaped, dates as
    /// seconds since the reference date, data as Base64, decimals and floats as their shortest text.
    ///
    /// Complexity: O(n) in the size of the payload.
    /// - Throws: ``BinaryCodecError`` for malformed bytes, nesting deeper than
    ///   ``BinaryFormat/maximumDepth``, or a non-finite float (JSON has no way to write it).
    static func jsonData(fromBinary bytes: UnsafeRawBufferPointer) throws -> Data {
        try convert(bytes, nonFinite: .reject).json
    }

    /// The JSON for a binary payload as ``jsonData(fromBinary:)`` writes it, with NaN and ±Infinity as the
    /// strings `"NaN"`, `"Infinity"` and `"-Infinity"` (``NonFiniteNumbers/strings``) instead of throwing: the
    /// text a migration step gets, which `JSONDecoder` with ``PayloadCodec/migrationDecoder``'s strategy reads
    /// back into the same numbers.
    /// - Returns: The JSON, and whether a non-finite number became a string in it.
    static func jsonData(
        fromBinaryKeepingNonFinite bytes: UnsafeRawBufferPointer
    ) throws -> (json: Data, replacedNonFinite: Bool) {
        try convert(bytes, nonFinite: .strings)
    }

    /// How the JSON text of a payload shows NaN and ±Infinity, which JSON numbers cannot hold.
    enum NonFiniteNumbers {
        /// Throw: the text must decode to the very same values (migrations).
        case reject
        /// Write the strings `"NaN"`, `"Infinity"` and `"-Infinity"` (what `JSONEncoder` writes with
        /// `.convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")`):
        /// valid JSON for people and tools such as `jq`, but no longer the same values.
        case strings
    }

    /// The JSON view of a binary payload: like ``jsonData(fromBinary:)``, except that NaN and ±Infinity
    /// become the strings `"NaN"`, `"Infinity"` and `"-Infinity"` instead of throwing.
    ///
    /// - Returns: The JSON, and whether it is exact: whether turning it back into a payload
    ///   (``binary(fromJSON:)``) gives these very bytes. It does not when a non-finite number became a string,
    ///   nor when a float holds a whole number (`7.0` reads back as the integer `7`: the same value, other
    ///   bytes, so a restored record would have another size).
    /// - Throws: ``BinaryCodecError`` for malformed bytes or nesting deeper than ``BinaryFormat/maximumDepth``.
    static func jsonView(fromBinary bytes: UnsafeRawBufferPointer) throws -> (json: Data, isExact: Bool) {
        let converted = try convert(bytes, nonFinite: .strings)
        if converted.replacedNonFinite { return (converted.json, false) }
        do {
            return (converted.json, try binary(fromJSON: converted.json).elementsEqual(bytes))
        } catch {
            // JSON this view wrote that does not turn back into a payload cannot restore this one.
            return (converted.json, false)
        }
    }

    private static func convert(
        _ bytes: UnsafeRawBufferPointer,
        nonFinite: NonFiniteNumbers
    ) throws -> (json: Data, replacedNonFinite: Bool) {
        let reader = BinaryReader(bytes)
        guard reader.count > 0 else {
            throw BinaryCodecError("Empty binary payload.")
        }
        let version = try reader.tag(at: 0)
        guard version == BinaryFormat.version else {
            throw BinaryCodecError("Unsupported binary payload version \(version).")
        }
        var writer = BinaryJSONWriter(reader: reader, nonFinite: nonFinite)
        let end = try writer.writeValue(at: 1, depth: 0)
        guard end == reader.count else {
            throw BinaryCodecError.corrupt("trailing bytes after the value", at: end)
        }
        return (Data(writer.output), writer.replacedNonFinite)
    }

    /// The string the JSON view writes for a non-finite number, or nil for a finite one.
    static func nonFiniteText(_ value: Double) -> String? {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        return nil
    }

    /// Returns the binary payload for any valid JSON text, such that ``BinaryDecoder`` decodes from it
    /// the values `JSONDecoder` would decode from the JSON.
    ///
    /// Integers that fit 64 bits become integers, other numbers become float64 when that keeps their
    /// text exactly and decimal text otherwise, so no precision is lost.
    ///
    /// Complexity: O(n) in the size of the JSON.
    /// - Throws: ``BinaryCodecError`` for malformed JSON or nesting deeper than ``BinaryFormat/maximumDepth``.
    static func binary(fromJSON data: Data) throws -> [UInt8] {
        try data.withUnsafeBytes { raw in
            var parser = BinaryJSONParser(input: raw)
            return try parser.parseDocument()
        }
    }

    // MARK: - Number text

    /// Returns the JSON text of the number at `offset`, as `JSONEncoder` writes numbers.
    ///
    /// - Throws: ``BinaryCodecError`` if the value is not a number, is not finite, or is a malformed decimal.
    static func jsonText(ofNumberAt offset: Int, in reader: BinaryReader) throws -> String {
        switch try reader.number(at: offset) {
        case .signed(let value)?: return String(value)
        case .unsigned(let value)?: return String(value)
        case .double(let value)?:
            guard value.isFinite else {
                throw BinaryCodecError("Non-finite number \(value) at byte \(offset) cannot be written as JSON.")
            }
            return jsonText(of: value)
        case .float(let value)?:
            guard value.isFinite else {
                throw BinaryCodecError("Non-finite number \(value) at byte \(offset) cannot be written as JSON.")
            }
            return jsonText(of: value)
        case .text(let text)?:
            var utf8 = Array(text.utf8)
            guard utf8.withUnsafeMutableBufferPointer({ BinaryJSONParser.isNumber(UnsafeBufferPointer($0)) }) else {
                throw BinaryCodecError.corrupt("decimal text is not a number", at: offset)
            }
            return text
        case nil:
            throw BinaryCodecError.corrupt("expected a number", at: offset)
        }
    }

    /// Returns a float's shortest text without a trailing `.0`, as `JSONEncoder` writes it.
    static func jsonText<Number: BinaryFloatingPoint & CustomStringConvertible>(of value: Number) -> String {
        var text = value.description
        if text.hasSuffix(".0") {
            text.removeLast(2)
        }
        return text
    }
}
