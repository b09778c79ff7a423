import Foundation

/// Small operations on JSON text that keep every byte of a value as it is, so numbers are never
/// rounded and payloads survive an export and import unchanged.
@_spi(Maintenance) public enum JSONText {
    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")

    /// `value` encoded as a JSON object (sorted keys) with one more member, `key`, holding `rawJSON` verbatim.
    static func object<T: Encodable>(_ value: T, appending key: String, rawJSON: Data) throws -> Data {
        try object(value, appending: [(key, rawJSON)])
    }

    /// `value` encoded as a JSON object (sorted keys) followed by `members`, each value verbatim, in order.
    static func object<T: Encodable>(_ value: T, appending members: [(key: String, rawJSON: Data)]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var object: Data
        do {
            object = try encoder.encode(value)
        } catch {
            throw LocalStorageError.encodingFailed(reason: "\(T.self): \(error)")
        }
        guard object.last == UInt8(ascii: "}") else { return object }
        object.removeLast()
        for (key, rawJSON) in members {
            if object.count > 1 { object.append(UInt8(ascii: ",")) }
            object.append(contentsOf: Array("\"\(key)\":".utf8))
            object.append(rawJSON)
        }
        object.append(UInt8(ascii: "}"))
        return object
    }

    /// The byte range of the value of the top-level member `key` of the JSON object in `bytes`, or nil.
    ///
    /// Only the object's own members are looked at; the key must be spelled without escapes.
    static func rangeOfMember(_ key: String, in bytes: [UInt8]) -> Range<Int>? {
        let wanted = Array(key.utf8)
        var index = skipSpace(bytes, 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        while true {
            index = skipSpace(bytes, index)
            guard index < bytes.count, bytes[index] == quote else { return nil }
            let nameEnd = endOfString(bytes, index)
            let name = bytes[(index + 1)..<max(index + 1, nameEnd - 1)]
            index = skipSpace(bytes, nameEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            let start = skipSpace(bytes, index + 1)
            let end = endOfValue(bytes, start)
            guard end > start else { return nil }
            if name.elementsEqual(wanted) { return start..<end }
            index = skipSpace(bytes, end)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    /// Valid JSON text indented for reading (four spaces), every scalar kept exactly as written.
    public static func prettyPrinted(_ json: Data) -> String {
        let bytes = [UInt8](json)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        var depth = 0
        var index = 0
        func newline() {
            out.append(UInt8(ascii: "\n"))
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 4))
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case quote:
                let end = endOfString(bytes, index)
                out.append(contentsOf: bytes[index..<end])
                index = end
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let next = skipSpace(bytes, index + 1)
                if next < bytes.count, bytes[next] == byte + 2 {  // `}` is `{` + 2, `]` is `[` + 2.
                    out.append(contentsOf: [byte, byte + 2])
                    index = next + 1
                    continue
                }
                out.append(byte)
                depth += 1
                newline()
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth = max(0, depth - 1)
                newline()
                out.append(byte)
            case UInt8(ascii: ","):
                out.append(byte)
                newline()
            case UInt8(ascii: ":"):
                out.append(contentsOf: Array(": ".utf8))
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                break
            default:
                out.append(byte)
            }
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The index after JSON white space starting at `index`.
    private static func skipSpace(_ bytes: [UInt8], _ index: Int) -> Int {
        var index = index
        while index < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[index]) { index += 1 }
        return index
    }

    /// The index just past the string that starts with the quote at `index` (or the end of `bytes`).
    private static func endOfString(_ bytes: [UInt8], _ index: Int) -> Int {
        closedString(bytes, at: index) ?? bytes.count
    }

    /// The index just past the string that starts with the quote at `index`, or nil when `bytes` end first.
    private static func closedString(_ bytes: [UInt8], at index: Int) -> Int? {
        var index = index + 1
        while index < bytes.count {
            switch bytes[index] {
            case backslash: index += 2
            case quote: return index + 1
            default: index += 1
            }
        }
        return nil
    }

    /// How many bytes the JSON string `bytes` start with takes (its quotes included), or nil when they do not
    /// start with a whole one: the CLI splits `"a=b"=5` after the name.
    public static func leadingStringLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.first == quote else { return nil }
        return closedString(bytes, at: 0)
    }

    /// The index just past the JSON value that starts at `index`.
    private static func endOfValue(_ bytes: [UInt8], _ index: Int) -> Int {
        guard index < bytes.count else { return index }
        switch bytes[index] {
        case quote:
            return endOfString(bytes, index)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = index
            while index < bytes.count {
                switch bytes[index] {
                case quote:
                    index = endOfString(bytes, index)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default: break
                }
                index += 1
            }
            return bytes.count
        default:
            var index = index
            scalar: while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09: break scalar
                default: index += 1
                }
            }
            return index
        }
    }
}
