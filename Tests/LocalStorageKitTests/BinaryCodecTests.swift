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

    /// Writing into a container after a later sibling was written throws, also through a `superEncoder()`
    /// of a finished container (which trapped: index -1).
    @Test func interleavedContainerWritesThrow() {
        #expect(throws: (any Error).self) { try BinaryEncoder().encode(Interleaved()) }
        #expect(throws: (any Error).self) { try BinaryEncoder().encode(LateSuperEncoder()) }
    }

    /// A record that writes its containers out of order (which `JSONEncoder` accepts) or asks one encoder for two
    /// kinds of container (which `JSONEncoder` traps on) fails to save with `encodingFailed`, never a crash, and
    /// stores nothing; the JSON codec saves the first.
    @Test func outOfOrderEncodersFailToSaveWithTheBinaryCodec() async throws {
        try await withStore(diskConfiguration(temporaryDirectory())) { storage async throws in
            await #expect(throws: LocalStorageError.self) {
                try await storage.save(OutOfOrder(id: "a", city: "Lyon", kind: "depot"))
            }
            await #expect(throws: LocalStorageError.self) { try await storage.save(MixedContainers(id: "m")) }
            #expect(try await storage.count(OutOfOrder.self) == 0)
        }
        var json = diskConfiguration(temporaryDirectory())
        json.codec = .json
        try await withStore(json) { storage async throws in
            let value = OutOfOrder(id: "a", city: "Lyon", kind: "depot")
            try await storage.save(value)
            #expect(try await storage.fetch(OutOfOrder.self, id: "a") == value)
        }
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
                // A JSON object cut short (its closing brace gone at least) is never valid.
                bytes.removeLast(Int.random(in: 1..<bytes.count, using: &random))
                #expect(throws: (any Error).self, "round \(round)") { try BinaryJSON.binary(fromJSON: Data(bytes)) }
                continue
            }
            bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            // One byte changed may still be JSON (a digit for a digit); what converts must decode or throw.
            let binary: [UInt8]
            do {
                binary = Array(try BinaryJSON.binary(fromJSON: Data(bytes)))
            } catch {
                continue
            }
            do {
                _ = try binary.withUnsafeBytes { try BinaryDecoder().decode(RichModel.self, from: $0) }
            } catch {
                #expect(error is DecodingError || error is BinaryCodecError, "round \(round): \(error)")
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
