import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// `JSONValue.parse`, the import's one-pass JSON reader, against what it replaced: `JSONDecoder` reading a
/// `Decodable` that tries each kind in turn, on random documents and on damaged ones.
@Suite struct JSONValueParserTests {
    /// The reading `JSONValue.parse` replaced, kept here as its reference.
    private struct Reference: Decodable {
        let value: JSONValue

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                value = .null
            } else if let bool = try? container.decode(Bool.self) {
                value = .bool(bool)
            } else if let integer = try? container.decode(Int64.self) {
                value = .integer(integer)
            } else if let unsigned = try? container.decode(UInt64.self) {
                value = .unsignedInteger(unsigned)
            } else if let double = try? container.decode(Double.self) {
                value = .double(double)
            } else if let string = try? container.decode(String.self) {
                value = .string(string)
            } else if let array = try? container.decode([Reference].self) {
                value = .array(array.map(\.value))
            } else {
                value = .object(try container.decode([String: Reference].self).mapValues(\.value))
            }
        }

        /// What `JSONDecoder` reads from `text`, or nil when it throws.
        static func read(_ text: String) -> JSONValue? {
            do {
                return try JSONDecoder().decode(Reference.self, from: Data(text.utf8)).value
            } catch {
                return nil
            }
        }
    }

    /// What `JSONValue.parse` reads from `text`, or nil when it throws.
    private static func parsed(_ text: String) -> JSONValue? {
        do {
            return try JSONValue.parse(Data(text.utf8))
        } catch {
            return nil
        }
    }

    @Test func randomDocumentsReadAsJSONDecoderReadsThem() {
        var random = SplitMix64(seed: 86)
        for round in 0..<3_000 {
            let text = Self.document(depth: 0, using: &random)
            let expected = Reference.read(text)
            #expect(expected != nil, "round \(round): the generator wrote invalid JSON: \(text)")
            #expect(Self.parsed(text) == expected, "round \(round): \(text)")
        }
    }

    /// A byte dropped, or a structural byte put in, anywhere: both readers refuse the text, or both read the same
    /// (up to the documented difference in numbers of more digits than a `Double` holds). The documents name no
    /// member twice: `JSONDecoder` never reads the value of a repeated name, damaged or not, where `parse` refuses
    /// text that is not JSON wherever it is.
    @Test func damagedDocumentsAreRefusedWhereJSONDecoderRefusesThem() {
        var random = SplitMix64(seed: 87)
        let inserts = Array("{}[],:\"\\ a-.e".utf8)
        var refused = 0
        for round in 0..<3_000 {
            var bytes = Array(Self.document(depth: 0, repeatingKeys: false, using: &random).utf8)
            let position = random.below(bytes.count + 1)
            if Bool.random(using: &random), position < bytes.count {
                bytes.remove(at: position)
            } else {
                bytes.insert(inserts[random.below(inserts.count)], at: position)
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let expected = Reference.read(text)
            if expected == nil { refused += 1 }
            let read = Self.parsed(text)
            #expect(read == expected || Self.sameUpToLongNumbers(read, expected), "round \(round): \(text)")
        }
        #expect(refused > 1_000, "the damage should make most documents invalid")
    }

    @Test func edgeCasesOfNumbersStringsAndStructure() {
        let agreed = [
            "1.0", "1e2", "1E+2", "2.5e1", "100e-2", "150e-1", "1000E-3", "1.50", "10", "1e19", "1e20", "-1.5e1", "-0",
            "-0.0", "-0e0", "0", "9223372036854775807",
            "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
            "18446744073709551616", "9223372036854775808.0", "1.5", "0.1", "1e-7", "4.9e-324",
            "1.7976931348623157e308", "1e400", "-1e400", "00", "01", "1.", ".5", "+1", "-", "1e", "1e+", "NaN",
            "Infinity", "\"a\\u0000b\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud83d\\ude00\"", "\"\\uD83D\\uDE00\"",
            "\"\\ud83dx\"", "\"\\u00e9\"", "\"e\u{301}\"", "\"\\/\"", "\"\\x\"", "\"tab\tin\"", "\"\u{7f}\"",
            "{\"a\":1,\"a\":2}", "{\"\u{e9}\":1,\"e\u{301}\":2}", "[1,]", "{\"a\":1,}", "[,]", "[1,,2]", "{,}",
            " 1 ", "1 2", "true", "nul", "[]", "{}", "[[[]]]", "", " ", "{\"a\" 1}", "{1:2}", "\"unterminated",
        ]
        for text in agreed {
            #expect(Self.parsed(text) == Reference.read(text), "\(text)")
        }
        // Whether the top-level names are written as they read (the import then takes "payload" from the value).
        for (text, literal) in [
            ("{\"a\":1,\"b\":{\"\\u0063\":\"\\n\"}}", true), ("{\"a\":1,\"p\\u0061yload\":{}}", false), ("[1]", true),
        ] {
            #expect((try? JSONValue.parseNotingNames(Data(text.utf8)))?.namesAreLiteral == literal, "\(text)")
        }
        // Deeper than `JSONDecoder`'s limit: refused, not a stack overflow.
        #expect(Self.parsed(String(repeating: "[", count: 100_000)) == nil)
        #expect(Self.parsed(String(repeating: "[", count: 300) + String(repeating: "]", count: 300)) != nil)
        // Where the readers differ (documented): a number's kind follows its exact decimal value, and the value of
        // a repeated name must be JSON too.
        #expect(Reference.read("{\"a\":1,\"a\":1-2}") == .object(["a": .integer(1)]))
        #expect(Self.parsed("{\"a\":1,\"a\":1-2}") == nil)
        #expect(Self.parsed("1.00000000000000000001") == .double(1))
        #expect(Self.parsed("1e-400") == .double(0))
    }

    /// A record line read in one pass holds what `JSONDecoder` reads from it into `RecordSummary`.
    @Test func recordLinesReadInOnePassAsJSONDecoderReadsThem() throws {
        var random = SplitMix64(seed: 88)
        for round in 0..<500 {
            var members: [String] = [
                "\"type\":\"T\(random.below(3))\"", "\"id\":\(Self.string(using: &random))",
                "\"createdAt\":\(random.below(1 << 40))", "\"updatedAt\":\(Self.number(using: &random))",
                "\"version\":\(random.below(5))", "\"format\":\"binary\"",
                "\"signature\":\(Self.number(using: &random))",
                "\"indexes\":{\"a\":\(Self.number(using: &random)),\"b\":\(Self.document(depth: 2, using: &random))}",
                "\"payload\":\(Self.document(depth: 1, using: &random))",
            ]
            switch random.below(4) {
            case 0: members.append("\"expiresAt\":null")
            case 1: members.append("\"expiresAt\":\(Self.number(using: &random))")
            case 2: members.append("\"isExpired\":\(Bool.random(using: &random)),\"sizeInBytes\":\(random.below(99))")
            default: break
            }
            if random.below(5) == 0 { members.remove(at: random.below(members.count)) }
            members.shuffle(using: &random)
            let line = Data(("{" + members.joined(separator: ",") + "}").utf8)
            let expected: RecordSummary?
            do {
                expected = try JSONDecoder().decode(RecordSummary.self, from: line)
            } catch {
                expected = nil
            }
            guard case .object(let read)? = try? JSONValue.parse(line) else {
                Issue.record("round \(round): not read")
                continue
            }
            #expect(
                RecordSummary(importing: read) == expected, "round \(round): \(String(decoding: line, as: UTF8.self))")
        }
    }

    /// Whether `first` and `second` differ only in numbers that one reads as a whole number and the other as the
    /// `Double` nearest it (a number of more significant digits than a `Double` holds, such as
    /// `-92233720368547758.08`, which `JSONDecoder` reads as an integer through its `Double`).
    private static func sameUpToLongNumbers(_ first: JSONValue?, _ second: JSONValue?) -> Bool {
        switch (first, second) {
        case (.double(let double)?, .integer(let integer)?), (.integer(let integer)?, .double(let double)?):
            return Double(integer) == double
        case (.double(let double)?, .unsignedInteger(let integer)?),
            (.unsignedInteger(let integer)?, .double(let double)?):
            return Double(integer) == double
        case (.array(let left)?, .array(let right)?):
            return left.count == right.count && zip(left, right).allSatisfy { sameUpToLongNumbers($0, $1) }
        case (.object(let left)?, .object(let right)?):
            return left.count == right.count && left.allSatisfy { sameUpToLongNumbers($0.value, right[$0.key]) }
        default:
            return first == second
        }
    }

    // MARK: - Random JSON

    /// A random JSON text; with `repeatingKeys`, objects often name a member twice.
    private static func document(depth: Int, repeatingKeys: Bool = true, using random: inout SplitMix64) -> String {
        let space = [" ", "", "", "\n", "\t", "\r\n "][random.below(6)]
        switch random.below(depth < 3 ? 9 : 6) {
        case 0: return ["null", "true", "false"][random.below(3)]
        case 1, 2: return space + number(using: &random) + space
        case 3, 4, 5: return space + string(using: &random)
        case 6, 7:
            let count = random.below(5)
            var members: [String] = []
            for position in 0..<count {
                // Few distinct names, so that keys repeat; or names that cannot.
                let name =
                    !repeatingKeys
                    ? "\"m\(position)\""
                    : random.below(3) == 0 ? "\"k\(random.below(3))\"" : string(using: &random)
                members.append(
                    name + space + ":" + document(depth: depth + 1, repeatingKeys: repeatingKeys, using: &random))
            }
            let comma = count > 0 && random.below(8) == 0 ? "," : ""
            return "{" + members.joined(separator: ",") + comma + space + "}"
        default:
            let elements = (0..<random.below(5)).map { _ in
                document(depth: depth + 1, repeatingKeys: repeatingKeys, using: &random)
            }
            let comma = !elements.isEmpty && random.below(8) == 0 ? "," : ""
            return "[" + elements.joined(separator: "," + space) + comma + "]"
        }
    }

    private static func number(using random: inout SplitMix64) -> String {
        switch random.below(10) {
        case 0: return String(Int64(bitPattern: random.next()))
        case 1: return String(random.next())
        case 2: return String(random.below(1_000) - 500)
        case 3:
            var double = Double(bitPattern: random.next())
            while !double.isFinite { double = Double(bitPattern: random.next()) }
            return "\(double)"
        case 4: return "\(Double(random.below(100_000)) / [1, 10, 100, 1_000, 8][random.below(5)])"
        case 5: return "\(random.below(1_000))" + ".0" + String(repeating: "0", count: random.below(3))
        case 6: return "\(random.below(10)).\(random.below(100))e\(["", "+", "-"][random.below(3)])\(random.below(25))"
        case 7: return "-" + "\(random.below(100))" + ["e3", "E-2", ".25", ""][random.below(4)]
        case 8:
            return ["0", "-0", "0.0", "9223372036854775808", "-9223372036854775808", "18446744073709551615"][
                random.below(6)]
        default:
            var single = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
            while !single.isFinite { single = Float(bitPattern: UInt32(truncatingIfNeeded: random.next())) }
            return "\(Double(single))"
        }
    }

    private static func string(using random: inout SplitMix64) -> String {
        var text = "\""
        for _ in 0..<random.below(8) {
            switch random.below(12) {
            case 0: text += ["\\n", "\\t", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\r"][random.below(8)]
            case 1: text += String(format: "\\u%04x", random.below(0xD800))
            case 2:
                let scalar = 0x10000 + random.below(0x100000)
                let high = 0xD800 + ((scalar - 0x10000) >> 10)
                let low = 0xDC00 + ((scalar - 0x10000) & 0x3FF)
                text += String(format: "\\u%04X\\u%04x", high, low)
            case 3: text += ["é", "e\u{301}", "中", "😀", "\u{7f}", "\u{200B}"][random.below(6)]
            default:
                // Printable ASCII but the quote and the backslash, which would end or break the literal.
                let byte = UInt8(0x20 + random.below(0x5F))
                text += String(UnicodeScalar(byte == 0x22 || byte == 0x5C ? 0x41 : byte))
            }
        }
        return text + "\""
    }
}
