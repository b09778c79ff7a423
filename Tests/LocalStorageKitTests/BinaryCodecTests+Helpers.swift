import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// Round trips and byte-level helpers the binary codec tests share.
extension BinaryCodecTests {
    /// Encodes and decodes `value` with the binary codec.
    func binaryRoundTrip<T: Codable>(_ value: T) throws -> T {
        let bytes = try BinaryEncoder().encode(value)
        return try bytes.withUnsafeBytes { try BinaryDecoder().decode(T.self, from: $0) }
    }

    /// Decodes a `T` from a binary payload.
    func decodeBinary<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try bytes.withUnsafeBytes { try BinaryDecoder().decode(type, from: $0) }
    }

    /// Encodes and decodes `value` with Foundation's JSON coders.
    func jsonRoundTrip<T: Codable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }

    /// Checks that the binary and the JSON round trip of `value` agree, and that `BinaryJSON` agrees with JSON.
    func checkAgainstJSON<T: Codable & Equatable>(
        _ value: T, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let viaBinary = try binaryRoundTrip(value)
        let viaJSON = try jsonRoundTrip(value)
        #expect(viaBinary == viaJSON, sourceLocation: sourceLocation)
        let json = try JSONEncoder().encode(value)
        let binary = try BinaryEncoder().encode(value)
        let converted = try binary.withUnsafeBytes { try BinaryJSON.jsonData(fromBinary: $0) }
        let expected = try JSONSerialization.jsonObject(with: json, options: .fragmentsAllowed)
        let actual = try JSONSerialization.jsonObject(with: converted, options: .fragmentsAllowed)
        #expect(
            jsonEqual(expected, actual), "\(String(decoding: converted, as: UTF8.self))",
            sourceLocation: sourceLocation)
        let fromJSON = try BinaryJSON.binary(fromJSON: json)
        let decoded = try fromJSON.withUnsafeBytes { try BinaryDecoder().decode(T.self, from: $0) }
        #expect(decoded == (try JSONDecoder().decode(T.self, from: json)), sourceLocation: sourceLocation)
    }

    /// Compares two values parsed by `JSONSerialization`.
    func jsonEqual(_ lhs: Any, _ rhs: Any) -> Bool {
        switch (lhs, rhs) {
        case (let lhs as [String: Any], let rhs as [String: Any]):
            return lhs.count == rhs.count
                && lhs.allSatisfy { key, value in rhs[key].map { jsonEqual(value, $0) } ?? false }
        case (let lhs as [Any], let rhs as [Any]):
            return lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { jsonEqual($0, $1) }
        case (is [String: Any], _), (is [Any], _), (_, is [String: Any]), (_, is [Any]):
            return false
        default:
            return "\(lhs)" == "\(rhs)"
        }
    }

    /// Makes random values of the test model.
    struct ModelGenerator {
        /// The source of randomness.
        var random: SplitMix64

        /// Returns a random string, sometimes empty, long or non-ASCII.
        mutating func string() -> String {
            let alphabet = Array("abcXYZ 019_-/\\\"\n\té€😀").map(String.init)
            let length = Int.random(in: 0...(Bool.random(using: &random) ? 8 : 200), using: &random)
            return (0..<length).map { _ in alphabet.randomElement(using: &random) ?? "" }.joined()
        }

        /// Returns a random integer of type `Integer`, often an edge value.
        mutating func integer<Integer: FixedWidthInteger>(_ type: Integer.Type) -> Integer {
            switch Int.random(in: 0..<6, using: &random) {
            case 0: return .min
            case 1: return .max
            case 2: return Integer(truncatingIfNeeded: Int.random(in: -40...200, using: &random))
            default: return Integer.random(in: .min ... .max, using: &random)
            }
        }

        /// Returns a random finite `Double` of widely varying magnitude.
        mutating func double() -> Double {
            switch Int.random(in: 0..<5, using: &random) {
            case 0: return Double(Int.random(in: -1000...1000, using: &random))
            case 1:
                let exponent = Double.random(in: -300...300, using: &random)
                return Double.random(in: -1...1, using: &random) * pow(10, exponent)
            case 2:
                let edges = [0.0, -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1, 1e20]
                return edges[Int(random.next() % UInt64(edges.count))]
            default: return Double.random(in: -1e6...1e6, using: &random)
            }
        }

        /// Returns a random finite `Float`.
        mutating func float() -> Float {
            Bool.random(using: &random)
                ? Float(Int.random(in: -99...99, using: &random)) / 8
                : Float.random(in: -1e30...1e30, using: &random)
        }

        /// Returns a random date, sometimes with a fractional second.
        mutating func date() -> Date {
            Date(
                timeIntervalSinceReferenceDate: Bool.random(using: &random)
                    ? Double(Int.random(in: -1_000_000_000...1_000_000_000, using: &random))
                    : Double.random(in: -1e9...1e9, using: &random))
        }

        /// Returns random bytes.
        mutating func data() -> Data {
            Data((0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
        }

        /// Returns a random URL.
        mutating func url() -> URL {
            URL(string: "https://example.com/p/\(random.next() % 1000)?q=\(random.next() % 7)&r=%20x#frag")
                ?? URL(fileURLWithPath: "/tmp")
        }

        /// Returns a random decimal with up to 18 digits.
        mutating func decimal() -> Decimal {
            let whole = Int64.random(in: -999_999_999...999_999_999, using: &random)
            let fraction = UInt64.random(in: 0...999_999_999, using: &random)
            return Decimal(string: "\(whole).\(fraction)") ?? 0
        }

        /// Returns `value()` or nil.
        mutating func maybe<T>(_ value: (inout ModelGenerator) -> T) -> T? {
            Bool.random(using: &random) ? value(&self) : nil
        }

        /// Returns a random shape.
        mutating func shape() -> Shape {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: return .circle(radius: double())
            case 1: return .rectangle(double(), double())
            case 2: return .empty
            default:
                return .tagged(
                    name: string(),
                    values: (0..<Int.random(in: 0...4, using: &random)).map { _ in
                        integer(Int8.self)
                    }, note: maybe { $0.string() })
            }
        }

        /// Returns a random child.
        mutating func child() -> Child {
            Child(
                label: string(),
                score: maybe { $0.double() },
                weights: (0..<Int.random(in: 0...4, using: &random)).map { _ in float() },
                seen: maybe { $0.date() },
                role: Role.allCases.randomElement(using: &random) ?? .viewer
            )
        }

        /// Returns `count` random elements.
        mutating func list<T>(_ maximum: Int, _ element: (inout ModelGenerator) -> T) -> [T] {
            (0..<Int.random(in: 0...maximum, using: &random)).map { _ in element(&self) }
        }

        /// Returns a random model.
        mutating func model() -> RichModel {
            RichModel(
                id: UUID(),
                name: string(),
                int8: integer(Int8.self), int16: integer(Int16.self), int32: integer(Int32.self),
                int64: integer(Int64.self), int: integer(Int.self),
                uint8: integer(UInt8.self), uint16: integer(UInt16.self), uint32: integer(UInt32.self),
                uint64: integer(UInt64.self), uint: integer(UInt.self),
                float: float(), double: double(), flag: Bool.random(using: &random),
                date: date(), data: data(), url: url(), decimal: decimal(),
                optionalString: maybe { $0.string() },
                optionalInt: maybe { $0.integer(Int.self) },
                nestedOptional: Bool.random(using: &random) ? .some(maybe { $0.integer(Int.self) }) : nil,
                children: list(3) { $0.child() },
                lookup: Dictionary(list(3) { ($0.string(), $0.list(2) { $0.child() }) }, uniquingKeysWith: { $1 }),
                byNumber: Dictionary(list(4) { ($0.integer(Int.self), $0.string()) }, uniquingKeysWith: { $1 }),
                byUUID: Dictionary(list(3) { _ in (UUID(), Int.random(in: -5...5)) }, uniquingKeysWith: { $1 }),
                shapes: list(4) { $0.shape() },
                matrix: list(3) { $0.list(3) { $0.maybe { $0.double() } } },
                inner: maybe {
                    RichModel.Inner(
                        dates: $0.list(3) { $0.date() }, blobs: $0.list(2) { $0.data() },
                        links: $0.list(2) { $0.url() }, amounts: $0.list(3) { $0.decimal() }, shape: $0.shape()
                    )
                }
            )
        }
    }
}
