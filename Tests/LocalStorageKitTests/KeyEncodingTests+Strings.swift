import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// The order-preserving string encoding of ``OrderedKey``.
extension KeyEncodingTests {
    /// The argument table of `stringEncoding`.
    static let stringEncodingCases: [(String, String)] = [
        ("", "00 01"),
        ("abc", "61 62 63 00 01"),
        ("\0", "00 ff 00 01"),
        ("a\0b", "61 00 ff 62 00 01"),
        ("é", "c3 a9 00 01"),
    ]

    /// Hand-checked string encodings.
    @Test(arguments: stringEncodingCases)
    func stringEncoding(value: String, expected: String) {
        let encoded = OrderedKey.encodeString(value)
        #expect(Self.hex(encoded.bytes) == expected)
        #expect(encoded.isTruncated == false)
        #expect(Self.decodeString(encoded.bytes).map { $0.value == value && $0.length == encoded.bytes.count } == true)
    }

    /// Embedded zero bytes order like UTF-8: "abc" < "abc\0" < "abc\0\0" < "abc\u{1}" < "abcd".
    @Test func zeroBytesOrderLikeUTF8() {
        let ordered = ["", "\0", "\0\0", "\u{1}", "abc", "abc\0", "abc\0\0", "abc\0a", "abc\u{1}", "abcd", "é"]
        let keys = ordered.map { OrderedKey.encodeString($0).bytes }
        for index in keys.indices.dropLast() {
            #expect(OrderedKey.compare(keys[index], keys[index + 1]) == -1, "\(ordered[index].debugDescription)")
        }
    }

    /// The argument table of `stringBudget`.
    static let stringBudgetCases: [(String, Int, Bool)] = [
        (String(repeating: "a", count: 400), 400, false),
        (String(repeating: "a", count: 401), 400, true),
        (String(repeating: "a", count: 398) + "\0", 400, false),
        (String(repeating: "a", count: 399) + "\0", 399, true),
        (String(repeating: "a", count: 399) + "\0b", 399, true),
        (String(repeating: "\0", count: 200), 400, false),
        (String(repeating: "\0", count: 201), 400, true),
        (String(repeating: "a", count: 399) + "é", 400, true),
        (String(repeating: "a", count: 10_000), 400, true),
    ]

    /// Cutting at the budget: never splits a `00 FF` pair, and marks the key with `00 02`.
    @Test(arguments: stringBudgetCases)
    func stringBudget(value: String, keptBytes: Int, truncated: Bool) {
        let encoded = OrderedKey.encodeString(value)
        #expect(encoded.isTruncated == truncated)
        #expect(encoded.bytes.count == keptBytes + 2)
        #expect(encoded.bytes.suffix(2) == [0x00, truncated ? 0x02 : 0x01])
        var appended: [UInt8] = [0x42]
        #expect(OrderedKey.appendString(value, to: &appended) == truncated)
        #expect(appended == [0x42] + encoded.bytes)
        let prefix = OrderedKey.encodePrefix(value)
        #expect(prefix.isTruncated == truncated)
        #expect(prefix.bytes == Array(encoded.bytes.dropLast(2)))
    }

    /// A cut through a multi-byte character decodes to a true prefix of the value.
    @Test func truncatedDecodeDropsIncompleteCharacter() {
        let value = String(repeating: "a", count: 399) + "é😀"
        let encoded = OrderedKey.encodeString(value)
        let decoded = Self.decodeString(encoded.bytes + [0x99])
        #expect(decoded?.value == String(repeating: "a", count: 399))
        #expect(decoded?.isTruncated == true)
        #expect(decoded?.length == encoded.bytes.count)
        let emoji = String(repeating: "a", count: 398) + "😀"
        #expect(Self.decodeString(OrderedKey.encodeString(emoji).bytes)?.value == String(repeating: "a", count: 398))
    }

    /// Malformed string keys decode to nil.
    @Test(arguments: ["", "61", "00", "61 00", "00 00", "00 03", "61 00 fe 00 01", "00 ff", "00 ff 00", "61 62 ff"])
    func malformedStringsDecodeToNil(hex: String) {
        #expect(Self.decodeString(Self.bytes(hex)) == nil)
    }

    /// Random bytes never crash the string decoder, and what it accepts is consistent.
    @Test func randomStringBytesNeverCrash() {
        var random = SplitMix64(seed: 0x5EED_0004)
        let pool: [UInt8] = [0x00, 0x01, 0x02, 0xFF, 0x61, 0xC3]
        for _ in 0..<3_000 {
            let count = Int.random(in: 0...12, using: &random)
            let bytes = (0..<count).map { _ in pool[Int(random.next() % UInt64(pool.count))] }
            guard let decoded = Self.decodeString(bytes) else { continue }
            #expect(decoded.length >= 2 && decoded.length <= bytes.count)
            #expect(bytes[decoded.length - 2] == 0x00)
            #expect(bytes[decoded.length - 1] == (decoded.isTruncated ? 0x02 : 0x01))
        }
    }

    /// Key order equals UTF-8 byte order (ties only between cut keys), and keys round-trip.
    @Test func randomStringsKeepOrderAndRoundTrip() {
        var random = SplitMix64(seed: 0x5EED_0005)
        var truncatedCount = 0
        for _ in 0..<3_000 {
            let a = Self.randomString(using: &random)
            let suffix = Self.randomString(using: &random)
            let b = Bool.random(using: &random) ? suffix : a + suffix
            let keyA = OrderedKey.encodeString(a)
            let keyB = OrderedKey.encodeString(b)
            let keyOrder = OrderedKey.compare(keyA.bytes, keyB.bytes)
            let valueOrder = OrderedKey.compare(Array(a.utf8), Array(b.utf8))
            if keyA.isTruncated || keyB.isTruncated {
                truncatedCount += 1
                #expect(keyOrder == valueOrder || (keyOrder == 0 && keyA.isTruncated && keyB.isTruncated))
            } else {
                #expect(keyOrder == valueOrder, "\(a.debugDescription) vs \(b.debugDescription)")
            }
            let decoded = Self.decodeString(keyA.bytes + [0x00, 0x01])
            #expect(decoded?.length == keyA.bytes.count)
            #expect(decoded?.isTruncated == keyA.isTruncated)
            if keyA.isTruncated {
                #expect(decoded.map { Array(a.utf8).starts(with: $0.value.utf8) } == true)
            } else {
                #expect(decoded?.value == a)
            }
        }
        #expect(truncatedCount > 100)
    }

    /// Prefix scans: `s` starts with `p` (UTF-8) exactly when `s`'s key starts with `p`'s prefix bytes; a cut
    /// prefix still finds every match (a superset the caller re-checks).
    @Test func randomPrefixScans() {
        var random = SplitMix64(seed: 0x5EED_0006)
        var matches = 0
        for _ in 0..<3_000 {
            let s = Self.randomString(using: &random)
            let p: String
            if Bool.random(using: &random) {
                p = String(
                    String.UnicodeScalarView(
                        s.unicodeScalars.prefix(
                            Int.random(in: 0...s.unicodeScalars.count, using: &random))))
            } else {
                p = Self.randomString(using: &random)
            }
            let hasPrefix = Array(s.utf8).starts(with: p.utf8)
            let key = OrderedKey.encodeString(s)
            let prefix = OrderedKey.encodePrefix(p)
            let keyStarts = key.bytes.starts(with: prefix.bytes)
            if hasPrefix { matches += 1 }
            if prefix.isTruncated {
                #expect(!hasPrefix || keyStarts)
            } else {
                #expect(hasPrefix == keyStarts, "\(s.debugDescription) / \(p.debugDescription)")
            }
        }
        #expect(matches > 1_000)
    }

    /// Composite keys (string then number) sort by string first, then number.
    @Test func compositeKeysSortByComponents() throws {
        var random = SplitMix64(seed: 0x5EED_0007)
        var rows: [(String, NumericValue, [UInt8])] = []
        for _ in 0..<300 {
            let string = ["", "a", "a\0", "ab", "b"][Int(random.next() % 5)]
            let number = Self.randomNumber(using: &random)
            var key: [UInt8] = []
            OrderedKey.appendString(string, to: &key)
            #expect(OrderedKey.appendNumber(number, to: &key))
            rows.append((string, number, key))
        }
        rows.sort { OrderedKey.compare($0.2, $1.2) < 0 }
        for (first, second) in zip(rows, rows.dropFirst()) {
            let stringOrder = OrderedKey.compare(Array(first.0.utf8), Array(second.0.utf8))
            #expect(stringOrder < 0 || (stringOrder == 0 && NumericValue.compare(first.1, second.1) <= 0))
        }
        let key = try #require(rows.first?.2)
        let parsed = try #require(key.withUnsafeBytes { OrderedKey.decodeString($0) })
        #expect(key.count - parsed.length == OrderedKey.numberLength)
    }

    /// The argument table of `byteCompare`.
    static let byteCompareCases: [([UInt8], [UInt8], Int)] = [
        ([UInt8](), [UInt8](), 0),
        ([], [0], -1),
        ([1, 2], [1, 2], 0),
        ([1, 2], [1, 3], -1),
        ([1, 2, 0], [1, 2], 1),
        ([0xFF], [0x00, 0xFF], 1),
    ]

    /// Byte comparison: lexicographic, a proper prefix first, contiguous or not.
    @Test(arguments: byteCompareCases)
    func byteCompare(a: [UInt8], b: [UInt8], expected: Int) {
        #expect(OrderedKey.compare(a, b) == expected)
        #expect(OrderedKey.compare(b, a) == -expected)
        #expect(OrderedKey.compare(a.lazy.map { $0 }, b.lazy.map { $0 }) == expected)
        #expect(OrderedKey.compare(a[...], b) == expected)
    }
}
