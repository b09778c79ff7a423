import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// Tests of the order-preserving key encodings in ``OrderedKey`` and of ``NumericValue``.
@Suite struct KeyEncodingTests {
    // MARK: - Helpers

    /// Bytes as lowercase hex pairs separated by spaces, e.g. `"13 04 33"`.
    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }
        .joined(separator: " ")
    }

    /// Bytes parsed from hex pairs separated by spaces; unparsable pairs become `0x00`.
    static func bytes(_ hex: String) -> [UInt8] {
        hex.split(separator: " ").map { UInt8($0, radix: 16) ?? 0 }
    }

    /// Decodes a number from an array.
    static func decodeNumber(_ bytes: [UInt8]) -> NumericValue? {
        bytes.withUnsafeBytes { OrderedKey.decodeNumber($0) }
    }

    /// Decodes a string from an array.
    static func decodeString(_ bytes: [UInt8]) -> (value: String, isTruncated: Bool, length: Int)? {
        bytes.withUnsafeBytes { OrderedKey.decodeString($0) }
    }

    /// Whether two values are the same case with the same payload bits (stricter than numeric `==`).
    static func identical(_ a: NumericValue, _ b: NumericValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x == y
        case (.uint(let x), .uint(let y)): return x == y
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        default: return false
        }
    }

    /// A random non-NaN number from a mix meant to hit every encoding path and many near-ties.
    static func randomNumber(using random: inout SplitMix64) -> NumericValue {
        switch random.next() % 12 {
        case 0:
            return .int(Int64(bitPattern: random.next()))
        case 1:
            return .int(Int64.random(in: -1_000...1_000, using: &random))
        case 2:
            return .uint(random.next())
        case 3:
            return .uint((1 << 63) | random.next() >> UInt64.random(in: 1...63, using: &random))
        case 4:
            let double = Double(bitPattern: random.next())
            return .double(double.isNaN ? 1.5 : double)
        case 5:
            // Integral doubles between 2^53 and 2^64, either sign.
            let magnitude = Double(random.next() >> UInt64.random(in: 0...11, using: &random))
            return .double(Bool.random(using: &random) ? magnitude : -magnitude)
        case 6:
            // Integers near 2^53, where Double stops being exact.
            let offset = Int64.random(in: -4...4, using: &random)
            let value = (Int64(1) << 53) + offset
            switch random.next() % 3 {
            case 0: return .int(value)
            case 1: return .uint(UInt64(value))
            default: return .double(Double(value))
            }
        case 7:
            // Subnormals and tiny normals.
            let bits = random.next() >> UInt64.random(in: 1...63, using: &random) & 0x001F_FFFF_FFFF_FFFF
            let tiny = Double(bitPattern: bits)
            return .double(Bool.random(using: &random) ? tiny : -tiny)
        case 8:
            let huge = Double(bitPattern: 0x7FE0_0000_0000_0000 | random.next() >> 12)
            return .double(Bool.random(using: &random) ? huge : -huge)
        case 9:
            return .double(Double(Int.random(in: -400...400, using: &random)) / 8)
        case 10:
            let specials: [NumericValue] = [
                .int(0), .double(-0.0), .double(.infinity), .double(-.infinity), .int(.min), .int(.max),
                .uint(.max), .double(0x1p63), .double(-0x1p63), .double(0x1p64), .double(-0x1p64),
                .double(.greatestFiniteMagnitude), .double(-.greatestFiniteMagnitude),
                .double(.leastNonzeroMagnitude), .double(-.leastNonzeroMagnitude),
                .double(.leastNormalMagnitude), .int(1), .int(-1), .uint(1),
            ]
            return specials[Int(random.next() % UInt64(specials.count))]
        default:
            // Integers that are also exact doubles, in any of the three cases.
            let value =
                Int64.random(in: -(1 << 40)...(1 << 40), using: &random)
                << Int64.random(
                    in: 0...20, using: &random)
            switch random.next() % 3 {
            case 0: return .int(value)
            case 1: return value >= 0 ? .uint(UInt64(value)) : .int(value)
            default: return .double(Double(value))
            }
        }
    }

    /// A random string: mostly short ones from a small alphabet (many shared prefixes), some longer than
    /// the budget that share long prefixes.
    static func randomString(using random: inout SplitMix64) -> String {
        let alphabet: [String] = ["a", "b", "\0", "\u{7F}", "\u{80}", "é", "中", "😀", "\u{FFFF}", "z"]
        var result = ""
        let kind = random.next() % 5
        if kind == 0 {
            let longCharacter = Bool.random(using: &random) ? "x" : "\0"
            result = String(repeating: longCharacter, count: Int.random(in: 190...410, using: &random))
        }
        let count = Int.random(in: 0...(kind == 1 ? 40 : 6), using: &random)
        for _ in 0..<count {
            result += alphabet[Int(random.next() % UInt64(alphabet.count))]
        }
        return result
    }

    // MARK: - Number encoding

    /// The argument table of `numberEncoding`.
    static let numberEncodingCases: [(NumericValue, String)] = [
        (.int(1), "13 04 33 80 00 00 00 00 00 00 00"),
        (.uint(1), "13 04 33 80 00 00 00 00 00 00 00"),
        (.double(1), "13 04 33 80 00 00 00 00 00 00 00"),
        (.int((1 << 53) + 1), "13 04 68 80 00 00 00 00 00 04 00"),
        (.uint((1 << 53) + 1), "13 04 68 80 00 00 00 00 00 04 00"),
        (.int(-3), "11 fb cb 3f ff ff ff ff ff ff ff"),
        (.double(-3), "11 fb cb 3f ff ff ff ff ff ff ff"),
        (.int(0), "12 00 00 00 00 00 00 00 00 00 00"),
        (.uint(0), "12 00 00 00 00 00 00 00 00 00 00"),
        (.double(0), "12 00 00 00 00 00 00 00 00 00 00"),
        (.double(-0.0), "12 00 00 00 00 00 00 00 00 00 00"),
        (.double(.infinity), "14 00 00 00 00 00 00 00 00 00 00"),
        (.double(-.infinity), "10 00 00 00 00 00 00 00 00 00 00"),
        (.int(.min), "11 fb 8d 7f ff ff ff ff ff ff ff"),
        (.double(-0x1p63), "11 fb 8d 7f ff ff ff ff ff ff ff"),
        (.int(.max), "13 04 71 ff ff ff ff ff ff ff fe"),
        (.uint(.max), "13 04 72 ff ff ff ff ff ff ff ff"),
        (.double(.greatestFiniteMagnitude), "13 08 32 ff ff ff ff ff ff f8 00"),
        (.double(.leastNonzeroMagnitude), "13 00 01 80 00 00 00 00 00 00 00"),
        (.double(-.leastNonzeroMagnitude), "11 ff fe 7f ff ff ff ff ff ff ff"),
        (.double(0.5), "13 04 32 80 00 00 00 00 00 00 00"),
        (.double(0.1), "13 04 2f cc cc cc cc cc cc d0 00"),
    ]

    /// Hand-checked encodings from the design document and edge values.
    @Test(arguments: numberEncodingCases)
    func numberEncoding(value: NumericValue, expected: String) {
        let encoded = OrderedKey.encodeNumber(value)
        #expect(encoded.map(Self.hex) == expected)
        #expect(encoded?.count == OrderedKey.numberLength)
    }

    /// The argument table of `numberDecodedCase`.
    static let numberDecodedCases: [(NumericValue, NumericValue)] = [
        (.double(5), NumericValue.int(5)),
        (.uint(5), .int(5)),
        (.double(-0.0), .int(0)),
        (.uint(.max), .uint(.max)),
        (.double(0x1p63), .uint(1 << 63)),
        (.int(.min), .int(.min)),
        (.double(-0x1p63), .int(.min)),
        (.double(-0x1p64), .double(-0x1p64)),
        (.double(0x1p64), .double(0x1p64)),
        (.double(0x1p70), .double(0x1p70)),
        (.double(0.5), .double(0.5)),
        (.double(-2.25), .double(-2.25)),
        (.int((1 << 53) + 1), .int((1 << 53) + 1)),
        (.uint((1 << 63) + 1), .uint((1 << 63) + 1)),
        (.double(.infinity), .double(.infinity)),
        (.double(-.infinity), .double(-.infinity)),
        (.double(.leastNonzeroMagnitude), .double(.leastNonzeroMagnitude)),
        (.double(-.greatestFiniteMagnitude), .double(-.greatestFiniteMagnitude)),
    ]

    /// The decoded case: integers within Int64 as `.int`, above it within UInt64 as `.uint`, else `.double`.
    @Test(arguments: numberDecodedCases)
    func numberDecodedCase(value: NumericValue, expected: NumericValue) {
        let decoded = OrderedKey.encodeNumber(value).flatMap(Self.decodeNumber)
        #expect(decoded.map { Self.identical($0, expected) } == true, "decoded \(String(describing: decoded))")
    }

    /// NaN cannot be encoded and appends nothing.
    @Test func nanIsRejected() {
        var bytes: [UInt8] = [0xAA]
        #expect(OrderedKey.appendNumber(.double(.nan), to: &bytes) == false)
        #expect(OrderedKey.appendNumber(.double(-.nan), to: &bytes) == false)
        #expect(OrderedKey.appendNumber(.double(.signalingNaN), to: &bytes) == false)
        #expect(bytes == [0xAA])
        #expect(OrderedKey.encodeNumber(.double(.nan)) == nil)
        #expect(OrderedKey.appendNumber(.int(7), to: &bytes))
        #expect(bytes.count == 1 + OrderedKey.numberLength)
    }

    /// 5 and 5.0 (and the unsigned 5) are the same number with the same key.
    @Test func integerAndDoubleShareEncoding() {
        #expect(OrderedKey.encodeNumber(.int(5)) == OrderedKey.encodeNumber(.double(5.0)))
        #expect(OrderedKey.encodeNumber(.uint(5)) == OrderedKey.encodeNumber(.double(5.0)))
        #expect(OrderedKey.encodeNumber(.int(-7)) == OrderedKey.encodeNumber(.double(-7.0)))
        #expect(NumericValue.int(5) == .double(5.0))
        #expect(NumericValue.int(5).hashValue == NumericValue.double(5.0).hashValue)
        #expect(NumericValue.int(0).hashValue == NumericValue.double(-0.0).hashValue)
        #expect(Set<NumericValue>([.int(5), .uint(5), .double(5), .double(5.5)]).count == 2)
    }

    /// Around 2^53 integers stay distinct and ordered, as Int64 and as UInt64, where Double cannot tell them apart.
    @Test(arguments: [false, true])
    func integersAroundTwoToThe53(unsigned: Bool) throws {
        let base: UInt64 = 1 << 53
        let values: [NumericValue] = (0...2).map { unsigned ? .uint(base + $0) : .int(Int64(base + $0)) }
        let keys = try values.map { try #require(OrderedKey.encodeNumber($0)) }
        #expect(OrderedKey.compare(keys[0], keys[1]) == -1)
        #expect(OrderedKey.compare(keys[1], keys[2]) == -1)
        #expect(NumericValue.compare(values[0], values[1]) == -1)
        #expect(NumericValue.compare(values[1], values[2]) == -1)
        #expect(NumericValue.compare(values[1], .double(0x1p53)) == 1)
        #expect(NumericValue.compare(values[1], .double(0x1p53 + 2)) == -1)
        #expect(keys[0] == OrderedKey.encodeNumber(.double(0x1p53)))
        #expect(keys[2] == OrderedKey.encodeNumber(.double(0x1p53 + 2)))
        for (offset, key) in keys.enumerated() {
            let exact = NumericValue.int(Int64(base) + Int64(offset))
            #expect(Self.decodeNumber(key).map { Self.identical($0, exact) } == true)
        }
    }

    /// The argument table of `numericCompare`.
    static let numericCompareCases: [(NumericValue, NumericValue, Int)] = [
        (.int(5), NumericValue.double(5), 0),
        (.int(0), .double(-0.0), 0),
        (.double(-0.0), .double(0), 0),
        (.int(-1), .uint(0), -1),
        (.uint(.max), .int(.max), 1),
        (.uint(.max), .double(0x1p64), -1),
        (.int(.max), .double(0x1p63), -1),
        (.int(.min), .double(-0x1p63), 0),
        (.int(.min), .double((-0x1p63 as Double).nextUp), -1),
        (.int(.min), .double(-0x1p64), 1),
        (.int(3), .double(3.5), -1),
        (.int(-3), .double(-3.5), 1),
        (.int(-3), .double(-2.5), -1),
        (.uint(3), .double(2.5), 1),
        (.uint(0), .double(-0.5), 1),
        (.uint(0), .double(0.5), -1),
        (.int(.max), .double(.infinity), -1),
        (.uint(.max), .double(-.infinity), 1),
        (.double(.leastNonzeroMagnitude), .int(0), 1),
        (.double(-.leastNonzeroMagnitude), .int(0), -1),
    ]

    /// Exact comparisons between cases, including the boundaries of Int64 and UInt64.
    @Test(arguments: numericCompareCases)
    func numericCompare(a: NumericValue, b: NumericValue, expected: Int) {
        #expect(NumericValue.compare(a, b) == expected)
        #expect(NumericValue.compare(b, a) == -expected)
        #expect((a == b) == (expected == 0))
    }

    /// NaN never traps: it equals itself and sorts above every number.
    @Test func nanComparesWithoutTrapping() {
        #expect(NumericValue.compare(.double(.nan), .double(.nan)) == 0)
        #expect(NumericValue.compare(.double(.nan), .double(.infinity)) == 1)
        #expect(NumericValue.compare(.int(.max), .double(.nan)) == -1)
        #expect(NumericValue.compare(.double(.nan), .uint(.max)) == 1)
        #expect(NumericValue.double(.nan) == .double(.nan))
        #expect(NumericValue.double(.nan).hashValue == NumericValue.double(-.nan).hashValue)
    }

    /// The argument table of `numberDescription`.
    static let numberDescriptionCases: [(NumericValue, String)] = [
        (.int(-42), "-42"),
        (.uint(.max), "18446744073709551615"),
        (.double(5), "5.0"),
        (.double(0.1), "0.1"),
        (.double(1e20), "1e+20"),
        (.double(-.infinity), "-inf"),
    ]

    /// Display strings: integers as integers, doubles as Swift prints them.
    @Test(arguments: numberDescriptionCases)
    func numberDescription(value: NumericValue, expected: String) {
        #expect(value.description == expected)
        #expect("\(value)" == expected)
    }

    /// `doubleValue` converts every case.
    @Test func numberDoubleValue() {
        #expect(NumericValue.int(-3).doubleValue == -3)
        #expect(NumericValue.uint(.max).doubleValue == 0x1p64)
        #expect(NumericValue.double(2.5).doubleValue == 2.5)
    }

    /// The argument table of `malformedNumbersDecodeToNil`.
    static let malformedNumbersDecodeToNilCases: [String] = [
        "",
        "13 04 33 80 00 00 00 00 00 00",
        "13 04 33 80 00 00 00 00 00 00 00 00",
        "00 04 33 80 00 00 00 00 00 00 00",
        "15 04 33 80 00 00 00 00 00 00 00",
        "ff 04 33 80 00 00 00 00 00 00 00",
        "12 00 00 00 00 00 00 00 00 00 01",
        "10 00 01 00 00 00 00 00 00 00 00",
        "14 80 00 00 00 00 00 00 00 00 00",
        "13 04 33 40 00 00 00 00 00 00 00",
        "11 fb cc c0 00 00 00 00 00 00 00",
        "13 04 33 80 00 00 00 00 00 00 01",
        "13 08 33 80 00 00 00 00 00 00 00",
        "13 00 00 80 00 00 00 00 00 00 00",
        "13 00 01 c0 00 00 00 00 00 00 00",
        "11 fb 8d 7f ff ff ff ff ff ff fe",
    ]

    /// Byte strings that are not exactly an encoding decode to nil.
    @Test(arguments: malformedNumbersDecodeToNilCases)
    func malformedNumbersDecodeToNil(hex: String) {
        #expect(Self.decodeNumber(Self.bytes(hex)) == nil)
    }

    /// Key order equals exact numeric order over thousands of random pairs, and keys round-trip.
    @Test func randomNumbersKeepOrderAndRoundTrip() throws {
        var random = SplitMix64(seed: 0x5EED_0001)
        for _ in 0..<6_000 {
            let a = Self.randomNumber(using: &random)
            let b: NumericValue
            switch random.next() % 4 {
            case 0: b = .double(a.doubleValue)
            case 1: b = .double(a.doubleValue.nextUp)
            default: b = Self.randomNumber(using: &random)
            }
            let keyA = try #require(OrderedKey.encodeNumber(a))
            let keyB = try #require(OrderedKey.encodeNumber(b))
            let expected = NumericValue.compare(a, b)
            #expect(OrderedKey.compare(keyA, keyB) == expected, "\(a) vs \(b)")
            #expect(NumericValue.compare(b, a) == -expected, "\(a) vs \(b)")
            let decoded = try #require(Self.decodeNumber(keyA), "\(a)")
            #expect(NumericValue.compare(decoded, a) == 0, "\(a) decoded as \(decoded)")
            #expect(OrderedKey.encodeNumber(decoded) == keyA, "\(a)")
        }
    }

    /// Where Double is exact, numeric order agrees with Double's own order.
    @Test func numericCompareAgreesWithDoubleWhereExact() {
        var random = SplitMix64(seed: 0x5EED_0002)
        for _ in 0..<3_000 {
            let x = Double(bitPattern: random.next())
            let y = Bool.random(using: &random) ? Double(bitPattern: random.next()) : x.nextDown
            guard !x.isNaN, !y.isNaN else { continue }
            let expected = x < y ? -1 : (x > y ? 1 : 0)
            #expect(NumericValue.compare(.double(x), .double(y)) == expected)
            let small = Int64.random(in: -(1 << 53)...(1 << 53), using: &random)
            let smallExpected = Double(small) < x ? -1 : (Double(small) > x ? 1 : 0)
            #expect(NumericValue.compare(.int(small), .double(x)) == smallExpected, "\(small) vs \(x)")
        }
    }

    /// Random 11-byte strings either fail to decode or are exactly the key of what they decode to.
    @Test func randomNumberBytesAreStrict() {
        var random = SplitMix64(seed: 0x5EED_0003)
        var decodedCount = 0
        for _ in 0..<20_000 {
            var bytes = (0..<OrderedKey.numberLength).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            bytes[0] = UInt8.random(in: 0x0F...0x15, using: &random)
            if bytes[0] == 0x13 || bytes[0] == 0x11 {
                // Plausible fields: exponent in range, top mantissa bit set, trailing bits often zero.
                let exponent = UInt16.random(in: 0...2_200, using: &random)
                let zeros = UInt64.random(in: 0...63, using: &random)
                var mantissa = ((random.next() | 1 << 63) >> zeros) << zeros
                mantissa |= 1 << 63
                var fields = (exponent: exponent, mantissa: mantissa)
                if bytes[0] == 0x11 { fields = (~exponent, ~mantissa) }
                bytes[1] = UInt8(truncatingIfNeeded: fields.exponent >> 8)
                bytes[2] = UInt8(truncatingIfNeeded: fields.exponent)
                for index in 0..<8 {
                    bytes[3 + index] = UInt8(truncatingIfNeeded: fields.mantissa >> UInt64(56 - 8 * index))
                }
            } else if random.next() % 2 == 0 {
                for index in 1..<bytes.count { bytes[index] = 0 }
            }
            guard let decoded = Self.decodeNumber(bytes) else { continue }
            decodedCount += 1
            #expect(OrderedKey.encodeNumber(decoded) == bytes, "\(Self.hex(bytes)) -> \(decoded)")
        }
        #expect(decodedCount > 1_000)
    }
}
