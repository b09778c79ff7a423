import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

// MARK: - Tests

@Suite struct BinaryCodecTests {
    /// The benchmark record survives both round trips identically.
    @Test func productRoundTripsLikeJSON() throws {
        let product = Product(
            id: "p-1042", title: "Wireless Headphones", category: "audio", price: 129.99, rating: 4.5,
            stock: 42, tags: ["sale", "new"], isFeatured: true
        )
        try checkAgainstJSON(product)
        #expect(try binaryRoundTrip(product) == product)
    }

    /// Signed integers of every width round-trip, at every tag boundary.
    @Test(arguments: [Int64.min, -129, -128, -33, -32, -1, 0, 1, 127, 128, 255, 256, 65_535, 65_536, Int64.max])
    func signedIntegersRoundTrip(value: Int64) throws {
        try checkAgainstJSON(value)
        try checkAgainstJSON(Int(value))
        if let small = Int32(exactly: value) { try checkAgainstJSON(small) }
        if let small = Int16(exactly: value) { try checkAgainstJSON(small) }
        if let small = Int8(exactly: value) { try checkAgainstJSON(small) }
    }

    /// Unsigned integers of every width round-trip, at every tag boundary.
    @Test(arguments: [UInt64.min, 1, 127, 128, 255, 256, 65_535, 65_536, UInt64(UInt32.max) + 1, UInt64.max])
    func unsignedIntegersRoundTrip(value: UInt64) throws {
        try checkAgainstJSON(value)
        try checkAgainstJSON(UInt(value))
        if let small = UInt32(exactly: value) { try checkAgainstJSON(small) }
        if let small = UInt16(exactly: value) { try checkAgainstJSON(small) }
        if let small = UInt8(exactly: value) { try checkAgainstJSON(small) }
    }

    /// Finite doubles and floats round-trip and print as JSONEncoder prints them.
    @Test(arguments: [
        0.0, -0.0, 1.0, -1.5, 0.1, 129.99, 1e20, 1e-7, 123_456_789.123, .pi,
        .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
    ])
    func floatingPointRoundTrips(value: Double) throws {
        try checkAgainstJSON(value)
        try checkAgainstJSON(Float(value).isFinite ? Float(value) : 1)
        try checkAgainstJSON([value])
    }

    /// Infinities and NaN survive the binary codec; JSON conversion refuses them.
    @Test func infinitiesRoundTripInBinaryOnly() throws {
        for value in [Double.infinity, -.infinity] {
            #expect(try binaryRoundTrip(value) == value)
            #expect(try binaryRoundTrip(Float(value)) == Float(value))
            #expect(try binaryRoundTrip(["x": value]) == ["x": value])
            let bytes = try BinaryEncoder().encode(value)
            #expect(throws: BinaryCodecError.self) {
                try bytes.withUnsafeBytes { try BinaryJSON.jsonData(fromBinary: $0) }
            }
        }
        #expect(try binaryRoundTrip(Double.nan).isNaN)
    }

    /// Booleans and strings of every length class round-trip, escapes included.
    @Test func scalarsAndStringsRoundTrip() throws {
        try checkAgainstJSON(true)
        try checkAgainstJSON(false)
        let strings = [
            "", "a", "héllo wörld", String(repeating: "x", count: 31), String(repeating: "y", count: 32),
            String(repeating: "z", count: 200), String(repeating: "€", count: 10_000), "\u{0}\u{1F}\"\\/",
        ]
        for string in strings {
            try checkAgainstJSON(string)
            try checkAgainstJSON([string: string])
        }
    }

    /// Optionals, nil values and missing keys behave as in JSON.
    @Test func optionalsRoundTrip() throws {
        try checkAgainstJSON([1, nil, 3] as [Int?])
        try checkAgainstJSON(["a": nil, "b": 2] as [String: Int?])
        try checkAgainstJSON(Child(label: "x", score: nil, weights: [], seen: nil, role: .admin))
        try checkAgainstJSON(Child(label: "x", score: 2, weights: [1, 2.5], seen: Date(), role: .editor))
        #expect(try binaryRoundTrip(Int?.none) == nil)
        #expect(try binaryRoundTrip(Int??.some(nil)) == jsonRoundTrip(Int??.some(nil)))
    }

    /// Arrays and dictionaries with String, Int and other keys round-trip as in JSON.
    @Test func collectionsRoundTrip() throws {
        try checkAgainstJSON([[Int]]())
        try checkAgainstJSON([[1, 2], [], [3]])
        try checkAgainstJSON(["b": [1], "a": []] as [String: [Int]])
        try checkAgainstJSON([1: "one", -2: "minus two", 300: "three hundred"] as [Int: String])
        try checkAgainstJSON([Role.admin.rawValue: 1])
        try checkAgainstJSON([true: 1, false: 0] as [Bool: Int])
        try checkAgainstJSON([UUID(): [1.5], UUID(): []] as [UUID: [Double]])
        try checkAgainstJSON((0..<300).map { "item \($0)" })
        try checkAgainstJSON(Dictionary(uniqueKeysWithValues: (0..<300).map { ("key\($0)", $0) }))
        try checkAgainstJSON([String: Int]())
    }

    /// Synthesized Codable enums with associated values round-trip as in JSON.
    @Test func enumsWithAssociatedValuesRoundTrip() throws {
        let shapes: [Shape] = [
            .circle(radius: 2), .rectangle(1, -2.5), .empty,
            .tagged(name: "t", values: [-128, 127], note: nil), .tagged(name: "", values: [], note: "n"),
        ]
        for shape in shapes {
            try checkAgainstJSON(shape)
        }
        try checkAgainstJSON(shapes)
        try checkAgainstJSON(Role.viewer)
    }

    /// Date, Data, URL, Decimal and UUID round-trip as in JSON.
    @Test func foundationTypesRoundTrip() throws {
        let date = Date(timeIntervalSinceReferenceDate: 726_774_000.125)
        try checkAgainstJSON(date)
        try checkAgainstJSON(Date(timeIntervalSince1970: 0))
        try checkAgainstJSON(Data())
        try checkAgainstJSON(Data([0, 1, 2, 255]))
        try checkAgainstJSON(URL(string: "https://example.com/a%20b?c=d#e"))
        try checkAgainstJSON(URL(fileURLWithPath: "/tmp/some file.txt"))
        for text in ["0", "-1.5", "3.14159265358979323846264338327950288", "12345678901234567890123", "0.000001"] {
            try checkAgainstJSON(Decimal(string: text))
        }
        try checkAgainstJSON(UUID())
        try checkAgainstJSON(["when": date])
    }

    /// Nested containers, encodeNil and superEncoder written by hand round-trip.
    @Test func handWrittenContainersRoundTrip() throws {
        try checkAgainstJSON(HandWritten(name: "h", point: (3, -4), list: ["a", nil, "c"], parent: 7))
        try checkAgainstJSON(HandWritten(name: "", point: (0, 0), list: [], parent: -1))
    }

    /// Subclasses sharing a container or using `super` round-trip as in JSON.
    @Test func superclassesRoundTrip() throws {
        try checkAgainstJSON(Dog(name: "Rex", breed: "collie"))
        try checkAgainstJSON(Cat(name: "Tom", lives: 9))
        try checkAgainstJSON([Dog(name: "a", breed: "b")])
    }

    /// A value that encodes nothing is `{}` when nested and an error at the top level.
    @Test func valueThatEncodesNothing() throws {
        try checkAgainstJSON([Nothing(), Nothing()])
        try checkAgainstJSON(["x": Nothing()])
        #expect(throws: EncodingError.self) { try BinaryEncoder().encode(Nothing()) }
    }

    /// Writing into a container after a later sibling was written throws.
    @Test func interleavedContainerWritesThrow() {
        #expect(throws: (any Error).self) { try BinaryEncoder().encode(Interleaved()) }
    }

    /// Payloads converted from JSON decode with JSONDecoder's leniency and errors.
    @Test func decodingIsLenientLikeJSONDecoder() throws {
        func decode<T: Decodable>(_ type: T.Type, json: String) throws -> T {
            let binary = try BinaryJSON.binary(fromJSON: Data(json.utf8))
            return try binary.withUnsafeBytes { try BinaryDecoder().decode(T.self, from: $0) }
        }
        #expect(try decode(Int.self, json: "5.0") == 5)
        #expect(try decode(UInt8.self, json: "255") == 255)
        #expect(try decode(Double.self, json: "5") == 5)
        #expect(try decode(Float.self, json: "0.1") == 0.1)
        #expect(try decode(Date.self, json: "10") == Date(timeIntervalSinceReferenceDate: 10))
        #expect(try decode(Decimal.self, json: "2.50") == Decimal(string: "2.5"))
        #expect(try decode(Double.self, json: "1E2") == 100)
        #expect(try decode(Data.self, json: "\"AAEC\"") == Data([0, 1, 2]))
        #expect(try decode(URL.self, json: "\"https://a.b/c\"") == URL(string: "https://a.b/c"))
        #expect(
            try decode(
                [String: Int].self,
                json: " { \"a\" : 1 , \"b\":[2][0] } ".replacingOccurrences(
                    of: "[2][0]", with: "2")) == ["a": 1, "b": 2])
        #expect(throws: DecodingError.self) { try decode(UInt8.self, json: "256") }
        #expect(throws: DecodingError.self) { try decode(Int.self, json: "1.5") }
        #expect(throws: DecodingError.self) { try decode(Int.self, json: "\"1\"") }
        #expect(throws: DecodingError.self) { try decode(Bool.self, json: "1") }
        #expect(throws: DecodingError.self) { try decode(Product.self, json: "{}") }
        #expect(throws: DecodingError.self) { try decode(Data.self, json: "\"not base64!\"") }
        #expect(throws: BinaryCodecError.self) { try decode(Int.self, json: "[1,]") }
    }

    /// Decoding errors are typed DecodingErrors with the right coding paths.
    @Test func decodingErrorsCarryCodingPaths() throws {
        let bytes = try BinaryEncoder().encode(["items": [["label": "x"]]])
        do {
            _ = try bytes.withUnsafeBytes { try BinaryDecoder().decode([String: [Child]].self, from: $0) }
            Issue.record("expected keyNotFound")
        } catch DecodingError.keyNotFound(let key, let context) {
            #expect(key.stringValue == "weights")
            #expect(context.codingPath.map(\.stringValue) == ["items", "Index 0"])
        }
        let wrongType = try BinaryEncoder().encode(["label": 1])
        do {
            _ = try wrongType.withUnsafeBytes { try BinaryDecoder().decode(Child.self, from: $0) }
            Issue.record("expected typeMismatch")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["label"])
        }
        let null = try BinaryEncoder().encode(["label": String?.none])
        #expect(throws: DecodingError.self) {
            try null.withUnsafeBytes { try BinaryDecoder().decode(Child.self, from: $0) }
        }
    }

    /// Random rich models agree with JSON in every direction (fixed seed).
    @Test func randomModelsMatchJSON() throws {
        var generator = ModelGenerator(random: SplitMix64(seed: 0x5EED))
        for _ in 0..<60 {
            let model = generator.model()
            try checkAgainstJSON(model)
            let pretty = JSONEncoder()
            pretty.outputFormatting = [.prettyPrinted, .sortedKeys]
            let json = try pretty.encode(model)
            let binary = try BinaryJSON.binary(fromJSON: json)
            let decoded = try binary.withUnsafeBytes { try BinaryDecoder().decode(RichModel.self, from: $0) }
            #expect(decoded == (try JSONDecoder().decode(RichModel.self, from: json)))
        }
    }

    /// Mutated, truncated and random payloads only ever throw.
    @Test func corruptPayloadsThrowAndNeverCrash() throws {
        var generator = ModelGenerator(random: SplitMix64(seed: 0xBAD))
        let product = Product(
            id: "p", title: "t", category: "c", price: 1.5, rating: 2, stock: 3, tags: ["a"],
            isFeatured: true)
        let payloads =
            try [BinaryEncoder().encode(product)]
            + (0..<4).map { _ in try BinaryEncoder().encode(generator.model()) }
        var random = SplitMix64(seed: 42)
        for round in 0..<3000 {
            var bytes = payloads[round % payloads.count]
            switch round % 4 {
            case 0:
                bytes.removeLast(Int.random(in: 1..<bytes.count, using: &random))
            case 1:
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            case 2:
                let position = Int.random(in: 1..<bytes.count, using: &random)
                bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
            default:
                bytes =
                    [BinaryFormat.version]
                    + (0..<Int.random(in: 0...64, using: &random)).map { _ in
                        UInt8.random(in: 0...255, using: &random)
                    }
            }
            _ = try? bytes.withUnsafeBytes { try BinaryDecoder().decode(RichModel.self, from: $0) }
            _ = try? bytes.withUnsafeBytes { try BinaryDecoder().decode(Product.self, from: $0) }
            _ = try? bytes.withUnsafeBytes { try BinaryJSON.jsonData(fromBinary: $0) }
        }
        #expect(throws: BinaryCodecError.self) { try decodeBinary(Int.self, from: []) }
        #expect(throws: BinaryCodecError.self) { try decodeBinary(Int.self, from: [2, 1]) }
        #expect(throws: BinaryCodecError.self) { try decodeBinary(Int.self, from: [BinaryFormat.version, 1, 1]) }
    }

    /// Mutated and truncated JSON only ever throws.
    @Test func corruptJSONThrowsAndNeverCrashes() throws {
        var generator = ModelGenerator(random: SplitMix64(seed: 0xC0DE))
        let json = Array(try JSONEncoder().encode(generator.model()))
        var random = SplitMix64(seed: 7)
        for round in 0..<600 {
            var bytes = json
            if round % 2 == 0 {
                bytes.removeLast(Int.random(in: 1..<bytes.count, using: &random))
            } else {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if let binary = try? BinaryJSON.binary(fromJSON: Data(bytes)) {
                _ = try? binary.withUnsafeBytes { try BinaryDecoder().decode(RichModel.self, from: $0) }
            }
        }
    }

    /// Nesting beyond the limit throws instead of overflowing the stack.
    @Test func deepNestingThrowsInsteadOfOverflowing() throws {
        let depth = 100_000
        let json = String(repeating: "{\"child\":", count: depth) + "null" + String(repeating: "}", count: depth)
        #expect(throws: BinaryCodecError.self) { try BinaryJSON.binary(fromJSON: Data(json.utf8)) }
        let shallow = String(repeating: "{\"child\":", count: 500) + "null" + String(repeating: "}", count: 500)
        let binary = try BinaryJSON.binary(fromJSON: Data(shallow.utf8))
        var nested = binary
        for _ in 0..<3 {
            // Wrap the payload in more maps by hand, beyond the converter's limit.
            nested = try wrapInMaps(nested, times: 200)
        }
        #expect(throws: BinaryCodecError.self) { try decodeBinary(Node.self, from: nested) }
        #expect(throws: BinaryCodecError.self) {
            try nested.withUnsafeBytes { try BinaryJSON.jsonData(fromBinary: $0) }
        }
    }

    /// Wraps the value of a payload in `times` maps `{"child": …}`.
    private func wrapInMaps(_ payload: [UInt8], times: Int) throws -> [UInt8] {
        var writer = BinaryWriter(capacity: payload.count + times * 16)
        writer.append(BinaryFormat.version)
        var headers: [Int] = []
        for _ in 0..<times {
            headers.append(writer.beginContainer(BinaryFormat.Tag.map))
            writer.writeKey("child")
        }
        payload.dropFirst().withUnsafeBytes { writer.append(contentsOf: $0) }
        for header in headers.reversed() {
            writer.endContainer(header: header, count: 1)
        }
        return writer.bytes
    }
}

// MARK: - Fixtures and helpers

/// The fixtures live inside the suite so that their names cannot clash with other test files.
extension BinaryCodecTests {

    /// The record of the performance targets.
    struct Product: Codable, Equatable {
        let id: String
        var title: String
        var category: String
        var price: Double
        var rating: Double
        var stock: Int
        var tags: [String]
        var isFeatured: Bool
    }

    /// An enum with associated values, using synthesized Codable.
    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case rectangle(Double, Double)
        case empty
        case tagged(name: String, values: [Int8], note: String?)
    }

    /// An enum with raw values.
    enum Role: String, Codable, CaseIterable {
        case admin, editor, viewer
    }

    /// A small nested struct.
    struct Child: Codable, Equatable {
        var label: String
        var score: Double?
        var weights: [Float]
        var seen: Date?
        var role: Role
    }

    /// Every field type the codec special-cases, in optional and nested shapes.
    struct RichModel: Codable, Equatable {
        var id: UUID
        var name: String
        var int8: Int8
        var int16: Int16
        var int32: Int32
        var int64: Int64
        var int: Int
        var uint8: UInt8
        var uint16: UInt16
        var uint32: UInt32
        var uint64: UInt64
        var uint: UInt
        var float: Float
        var double: Double
        var flag: Bool
        var date: Date
        var data: Data
        var url: URL
        var decimal: Decimal
        var optionalString: String?
        var optionalInt: Int?
        var nestedOptional: Int??
        var children: [Child]
        var lookup: [String: [Child]]
        var byNumber: [Int: String]
        var byUUID: [UUID: Int]
        var shapes: [Shape]
        var matrix: [[Double?]]
        var inner: Inner?

        /// A nested struct inside the model.
        struct Inner: Codable, Equatable {
            var dates: [Date]
            var blobs: [Data]
            var links: [URL]
            var amounts: [Decimal]
            var shape: Shape
        }
    }

    /// A type using nested containers, encodeNil and superEncoder by hand.
    struct HandWritten: Codable, Equatable {
        var name: String
        var point: (x: Int, y: Int)
        var list: [String?]
        var parent: Int

        /// The top-level keys.
        enum Keys: String, CodingKey {
            case name, point, list, missing
        }

        /// The keys of the nested point.
        enum PointKeys: String, CodingKey {
            case x, y
        }

        /// Creates a value from its parts.
        init(name: String, point: (x: Int, y: Int), list: [String?], parent: Int) {
            self.name = name
            self.point = point
            self.list = list
            self.parent = parent
        }

        /// Compares all fields (tuples are not Equatable).
        static func == (lhs: HandWritten, rhs: HandWritten) -> Bool {
            lhs.name == rhs.name && lhs.point == rhs.point && lhs.list == rhs.list && lhs.parent == rhs.parent
        }

        /// Encodes by hand.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(name, forKey: .name)
            var point = container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
            try point.encode(self.point.x, forKey: .x)
            try point.encode(self.point.y, forKey: .y)
            var list = container.nestedUnkeyedContainer(forKey: .list)
            for item in self.list {
                if let item {
                    try list.encode(item)
                } else {
                    try list.encodeNil()
                }
            }
            try container.encodeNil(forKey: .missing)
            var parent = container.superEncoder().singleValueContainer()
            try parent.encode(self.parent)
        }

        /// Decodes by hand.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            name = try container.decode(String.self, forKey: .name)
            let point = try container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
            self.point = (try point.decode(Int.self, forKey: .x), try point.decode(Int.self, forKey: .y))
            var list = try container.nestedUnkeyedContainer(forKey: .list)
            var items: [String?] = []
            while !list.isAtEnd {
                items.append(try list.decodeNil() ? nil : try list.decode(String.self))
            }
            self.list = items
            #expect(try container.decodeNil(forKey: .missing))
            parent = try container.superDecoder().singleValueContainer().decode(Int.self)
        }
    }

    /// A base class whose subclass shares its keyed container.
    class Animal: Codable {
        var name: String

        /// Creates an animal with a name.
        init(name: String) {
            self.name = name
        }
    }

    /// A subclass that encodes into the same container as its superclass, and one into `super`.
    final class Dog: Animal, Equatable {
        var breed: String

        /// The subclass's keys.
        enum Keys: String, CodingKey {
            case breed
        }

        /// Creates a dog.
        init(name: String, breed: String) {
            self.breed = breed
            super.init(name: name)
        }

        /// Decodes the subclass fields, then the superclass.
        required init(from decoder: any Decoder) throws {
            breed = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .breed)
            try super.init(from: decoder)
        }

        /// Encodes the subclass fields, then the superclass.
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(breed, forKey: .breed)
            try super.encode(to: encoder)
        }

        /// Compares all fields.
        static func == (lhs: Dog, rhs: Dog) -> Bool {
            lhs.name == rhs.name && lhs.breed == rhs.breed
        }
    }

    /// A subclass that stores its superclass under the `super` key.
    final class Cat: Animal, Equatable {
        var lives: Int

        /// The subclass's keys.
        enum Keys: String, CodingKey {
            case lives
        }

        /// Creates a cat.
        init(name: String, lives: Int) {
            self.lives = lives
            super.init(name: name)
        }

        /// Decodes the subclass fields, then the superclass.
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            lives = try container.decode(Int.self, forKey: .lives)
            try super.init(from: container.superDecoder())
        }

        /// Encodes the subclass fields, then the superclass.
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(lives, forKey: .lives)
            try super.encode(to: container.superEncoder())
        }

        /// Compares all fields.
        static func == (lhs: Cat, rhs: Cat) -> Bool {
            lhs.name == rhs.name && lhs.lives == rhs.lives
        }
    }

    /// A type that encodes nothing (JSON writes `{}` for it when nested).
    struct Nothing: Codable, Equatable {
        /// Encodes nothing at all.
        func encode(to encoder: any Encoder) throws {}
        /// Creates the empty value.
        init() {}
        /// Decodes nothing at all.
        init(from decoder: any Decoder) throws {}
    }

    /// A recursive type, to check the nesting limit.
    final class Node: Codable {
        var child: Node?
    }

    /// Writes into a nested container after writing to its parent (not supported; must throw).
    struct Interleaved: Encodable {
        /// The keys.
        enum Keys: String, CodingKey {
            case list, value
        }

        /// Encodes by hand.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var list = container.nestedUnkeyedContainer(forKey: .list)
            try container.encode(1, forKey: .value)
            try list.encode(2)
        }
    }

    // MARK: Helpers

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
