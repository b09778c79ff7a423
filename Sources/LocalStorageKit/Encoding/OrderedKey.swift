/// Order-preserving byte encodings for index keys.
///
/// For every pair of values of one kind, comparing their encodings byte by byte (`memcmp` order, a shorter
/// prefix first; see ``compare(_:_:)``) gives the same answer as comparing the values themselves. The
/// encodings are self-delimiting, so several can be concatenated into one composite key.
///
/// ## Numbers
///
/// A number (``NumericValue``) takes exactly ``numberLength`` (11) bytes. Byte 0 is a tag:
/// `0x10` for −∞, `0x11` negative, `0x12` zero (also −0.0), `0x13` positive and `0x14` for +∞.
/// For −∞, zero and +∞ the other ten bytes are zero. For a finite `x ≠ 0`, write
/// `|x| = M · 2^(e − 63)` with `M` normalised into `[2^63, 2^64)`: bytes 1–2 hold `e + 1075` as a
/// big-endian `UInt16` and bytes 3–10 hold `M` big-endian; for a negative `x` bytes 1–10 are inverted.
/// Every `Int64`, `UInt64` and `Double` (subnormals included) is encoded exactly, and equal numbers of
/// different kinds (`5` and `5.0`) have identical encodings. `NaN` cannot be encoded.
///
/// ## Strings
///
/// A string is its UTF-8 bytes with each `0x00` escaped as `00 FF`, followed by the terminator `00 01`.
/// At most ``stringBudget`` escaped bytes are kept. When a value's escaped bytes are longer, the longest
/// prefix of at most ``stringBudget`` bytes that does not split a `00 FF` pair is kept and the terminator is
/// `00 02` instead, marking the key as cut: the caller must re-check such a key against the full value,
/// stored elsewhere.
///
/// Order of string encodings:
/// - Two untruncated encodings compare exactly as the UTF-8 bytes of their strings do
///   (`"abc" < "abc\0" < "abc\0\0" < "abcd"`).
/// - An untruncated and a truncated encoding also compare as their full strings do; in particular a
///   truncated encoding sorts after the untruncated encoding of its own kept prefix taken as a whole string.
/// - Two truncated encodings are ordered only by their kept prefixes: strings longer than the budget that
///   share the kept prefix have equal keys, and their true order must come from the full values.
internal enum OrderedKey {
    /// The smallest key greater than every key starting with `prefix` (in byte order: LMDB's keys, Redis's
    /// sorted-set members), or nil when there is none.
    static func successor(of prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }

    /// The length in bytes of every number encoding.
    static let numberLength = 11

    /// The maximum number of escaped string bytes kept in a key before it is cut.
    static let stringBudget = 400

    /// The tag byte of −∞.
    static let negativeInfinityTag: UInt8 = 0x10
    /// The tag byte of finite negative numbers.
    static let negativeTag: UInt8 = 0x11
    /// The tag byte of zero (and −0.0).
    static let zeroTag: UInt8 = 0x12
    /// The tag byte of finite positive numbers.
    static let positiveTag: UInt8 = 0x13
    /// The tag byte of +∞.
    static let positiveInfinityTag: UInt8 = 0x14

    /// The bias added to the binary exponent `e` before it is stored (bytes 1–2 hold `e + 1075`).
    private static let exponentBias = 1075

    // MARK: - Numbers

    /// The canonical form of a number: its tag, and the exponent and mantissa fields exactly as they are
    /// stored (already inverted for negative numbers; both zero for −∞, zero and +∞).
    ///
    /// - Returns: `nil` for `NaN`.
    static func canonicalNumber(_ value: NumericValue) -> (tag: UInt8, exponent: UInt16, mantissa: UInt64)? {
        let isNegative: Bool
        let magnitude: UInt64
        let exponent: Int
        switch value {
        case .int(let integer):
            if integer == 0 { return (zeroTag, 0, 0) }
            isNegative = integer < 0
            let shift = integer.magnitude.leadingZeroBitCount
            magnitude = integer.magnitude << UInt64(shift)
            exponent = 63 - shift
        case .uint(let integer):
            if integer == 0 { return (zeroTag, 0, 0) }
            isNegative = false
            let shift = integer.leadingZeroBitCount
            magnitude = integer << UInt64(shift)
            exponent = 63 - shift
        case .double(let double):
            if double.isNaN { return nil }
            if double.isInfinite { return (double < 0 ? negativeInfinityTag : positiveInfinityTag, 0, 0) }
            if double == 0 { return (zeroTag, 0, 0) }
            isNegative = double.sign == .minus
            let exponentBits = Int(double.exponentBitPattern)
            let significandBits = double.significandBitPattern
            if exponentBits == 0 {
                // Subnormal: |x| = significand · 2^-1074 with 1 ≤ significand < 2^52.
                let shift = significandBits.leadingZeroBitCount
                magnitude = significandBits << UInt64(shift)
                exponent = 63 - shift - 1074
            } else {
                // Normal: |x| = (2^52 + significand) · 2^(exponentBits − 1075).
                magnitude = (significandBits | (1 << 52)) << 11
                exponent = exponentBits - 1023
            }
        }
        let biased = UInt16(truncatingIfNeeded: exponent + exponentBias)
        return isNegative ? (negativeTag, ~biased, ~magnitude) : (positiveTag, biased, magnitude)
    }

    /// Appends the 11-byte encoding of a number.
    ///
    /// - Returns: `false`, appending nothing, when the value is `NaN`; otherwise `true`.
    @discardableResult
    static func appendNumber(_ value: NumericValue, to bytes: inout [UInt8]) -> Bool {
        guard let form = canonicalNumber(value) else { return false }
        bytes.append(form.tag)
        bytes.append(UInt8(truncatingIfNeeded: form.exponent >> 8))
        bytes.append(UInt8(truncatingIfNeeded: form.exponent))
        withUnsafeBytes(of: form.mantissa.bigEndian) { bytes.append(contentsOf: $0) }
        return true
    }

    /// The 11-byte encoding of a number, or `nil` for `NaN`.
    static func encodeNumber(_ value: NumericValue) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(numberLength)
        return appendNumber(value, to: &bytes) ? bytes : nil
    }

    /// Decodes a number from exactly ``numberLength`` bytes.
    ///
    /// - Returns: `.int` for an integer within `Int64`, `.uint` for an integer above `Int64.max` within
    ///   `UInt64`, otherwise `.double` (also for integers such as 2^70 outside both ranges); zero decodes as
    ///   `.int(0)`. `nil` unless `bytes` is exactly an encoding that ``encodeNumber(_:)`` can produce.
    static func decodeNumber(_ bytes: UnsafeRawBufferPointer) -> NumericValue? {
        guard bytes.count == numberLength else { return nil }
        let tag = bytes[0]
        var exponentBits = UInt16(bytes[1]) << 8 | UInt16(bytes[2])
        var mantissa: UInt64 = 0
        for index in 3..<numberLength {
            mantissa = mantissa << 8 | UInt64(bytes[index])
        }
        switch tag {
        case negativeInfinityTag, zeroTag, positiveInfinityTag:
            guard exponentBits == 0, mantissa == 0 else { return nil }
            switch tag {
            case zeroTag: return .int(0)
            case negativeInfinityTag: return .double(-.infinity)
            default: return .double(.infinity)
            }
        case negativeTag:
            exponentBits = ~exponentBits
            mantissa = ~mantissa
        case positiveTag:
            break
        default:
            return nil
        }
        guard mantissa >> 63 == 1 else { return nil }
        let isNegative = tag == negativeTag
        let exponent = Int(exponentBits) - exponentBias
        let trailingZeros = mantissa.trailingZeroBitCount

        // An integer whose magnitude is below 2^64: exact as .int or .uint when it fits.
        if exponent >= 0, exponent <= 63, trailingZeros >= 63 - exponent {
            let whole = mantissa >> UInt64(63 - exponent)
            if !isNegative {
                return whole <= UInt64(Int64.max) ? .int(Int64(whole)) : .uint(whole)
            }
            if whole <= Int64.min.magnitude {
                return .int(Int64(truncatingIfNeeded: 0 &- whole))
            }
        }

        // Otherwise it must be exactly a Double: at most 53 significant bits, the lowest no smaller than
        // 2^-1074, the highest no larger than 2^1023.
        guard trailingZeros >= 11, exponent <= 1023, exponent - 63 + trailingZeros >= -1074 else { return nil }
        let exponentPattern: UInt
        let significandPattern: UInt64
        if exponent >= -1022 {
            exponentPattern = UInt(exponent + 1023)
            significandPattern = (mantissa >> 11) & ((1 << 52) - 1)
        } else {
            exponentPattern = 0
            significandPattern = mantissa >> UInt64(11 - 1022 - exponent)
        }
        return .double(
            Double(
                sign: isNegative ? .minus : .plus,
                exponentBitPattern: exponentPattern,
                significandBitPattern: significandPattern
            )
        )
    }

    // MARK: - Strings

    /// Appends the encoding of a string: its escaped UTF-8 bytes, cut to ``stringBudget``, and a terminator.
    ///
    /// - Returns: `true` when the value was cut (terminator `00 02`), `false` otherwise (terminator `00 01`).
    @discardableResult
    static func appendString(_ string: String, to bytes: inout [UInt8]) -> Bool {
        let isTruncated = appendEscaped(string, to: &bytes)
        bytes.append(0x00)
        bytes.append(isTruncated ? 0x02 : 0x01)
        return isTruncated
    }

    /// Appends the encoding of the string whose UTF-8 is `utf8`: what ``appendString(_:to:)`` appends for it, without
    /// making the string. `utf8` must be valid UTF-8, as the values a save computes are (a `String`'s); bytes read
    /// from disk go through `String(decoding:as:)` first, which repairs invalid ones as the stored keys were made.
    static func appendString(utf8: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        let isTruncated = appendEscaped(utf8.assumingMemoryBound(to: UInt8.self), to: &bytes)
        bytes.append(0x00)
        bytes.append(isTruncated ? 0x02 : 0x01)
    }

    /// The encoding of a string, and whether it was cut to ``stringBudget``.
    static func encodeString(_ string: String) -> (bytes: [UInt8], isTruncated: Bool) {
        var bytes: [UInt8] = []
        let isTruncated = appendString(string, to: &bytes)
        return (bytes, isTruncated)
    }

    /// The escaped bytes of a prefix, without a terminator, for prefix scans.
    ///
    /// The encoding of every string whose UTF-8 bytes start with those of `prefix` starts with these bytes.
    /// When `isTruncated` is `false` the converse holds too. When it is `true` the escaped prefix was longer
    /// than ``stringBudget`` and was cut like a value would be, so a scan also finds strings that do not
    /// start with `prefix`: the caller must re-check each hit against the full value.
    static func encodePrefix(_ prefix: String) -> (bytes: [UInt8], isTruncated: Bool) {
        var bytes: [UInt8] = []
        let isTruncated = appendEscaped(prefix, to: &bytes)
        return (bytes, isTruncated)
    }

    /// Parses one encoded string from the start of `bytes`.
    ///
    /// - Returns: the string, whether its key was cut, and the number of bytes consumed including the
    ///   terminator; `nil` when a `0x00` is followed by anything but `FF`, `01` or `02`, or when there is no
    ///   terminator. For a cut key the value is the kept prefix, with an incomplete trailing UTF-8 sequence
    ///   (left by a cut through a multi-byte character) removed, so it is a prefix of the original string.
    static func decodeString(_ bytes: UnsafeRawBufferPointer) -> (value: String, isTruncated: Bool, length: Int)? {
        var content: [UInt8] = []
        var runStart = 0
        var index = 0
        let count = bytes.count
        while index < count {
            if bytes[index] != 0 {
                index += 1
                continue
            }
            guard index + 1 < count else { return nil }
            let marker = bytes[index + 1]
            guard marker == 0xFF || marker == 0x01 || marker == 0x02 else { return nil }
            content.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<index]))
            switch marker {
            case 0xFF:
                content.append(0x00)
                index += 2
                runStart = index
            case 0x01:
                return (String(decoding: content, as: UTF8.self), false, index + 2)
            default:
                let kept = content[..<completeScalarsLength(content)]
                return (String(decoding: kept, as: UTF8.self), true, index + 2)
            }
        }
        return nil
    }

    /// Compares two byte sequences lexicographically (`memcmp` order, a proper prefix first).
    ///
    /// - Returns: `-1`, `0` or `1`.
    static func compare(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Int {
        let contiguous = a.withContiguousStorageIfAvailable { first in
            b.withContiguousStorageIfAvailable { second in compareBuffers(first, second) }
        }
        if let contiguous, let result = contiguous { return result }
        var firstIterator = a.makeIterator()
        var secondIterator = b.makeIterator()
        while true {
            switch (firstIterator.next(), secondIterator.next()) {
            case (nil, nil):
                return 0
            case (nil, _):
                return -1
            case (_, nil):
                return 1
            case (let first?, let second?):
                if first != second { return first < second ? -1 : 1 }
            }
        }
    }

    /// ``compare(_:_:)`` on contiguous buffers.
    private static func compareBuffers(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(a.count, b.count)
        var index = 0
        while index < common {
            let first = a[index]
            let second = b[index]
            if first != second { return first < second ? -1 : 1 }
            index += 1
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    /// Appends the escaped UTF-8 bytes of `string`, cut to ``stringBudget``, without a terminator.
    ///
    /// - Returns: `true` when bytes were left out.
    private static func appendEscaped(_ string: String, to bytes: inout [UInt8]) -> Bool {
        if let isTruncated = string.utf8.withContiguousStorageIfAvailable({ appendEscaped($0, to: &bytes) }) {
            return isTruncated
        }
        let utf8 = Array(string.utf8)
        return utf8.withUnsafeBufferPointer { appendEscaped($0, to: &bytes) }
    }

    /// Appends the escaped form of `source`, keeping the longest prefix of at most ``stringBudget`` escaped
    /// bytes that does not split a `00 FF` pair. Only the bytes that can be kept are examined.
    ///
    /// - Returns: `true` when bytes were left out.
    private static func appendEscaped(_ source: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) -> Bool {
        let end = source.count
        var remaining = stringBudget
        var start = 0
        while true {
            let limit = min(end, start + remaining)
            var stop = start
            while stop < limit, source[stop] != 0 {
                stop += 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[start..<stop]))
            remaining -= stop - start
            if stop == end { return false }
            // Either the budget ran out before `stop`, or `source[stop]` is a 0x00 needing two bytes.
            if source[stop] != 0 || remaining < 2 { return true }
            bytes.append(0x00)
            bytes.append(0xFF)
            remaining -= 2
            start = stop + 1
        }
    }

    /// The length of `content` without an incomplete UTF-8 sequence at its end.
    private static func completeScalarsLength(_ content: [UInt8]) -> Int {
        var index = content.count
        var continuationBytes = 0
        while index > 0, continuationBytes < 3, content[index - 1] & 0xC0 == 0x80 {
            index -= 1
            continuationBytes += 1
        }
        guard index > 0 else { return content.count }
        let lead = content[index - 1]
        let expected: Int
        switch lead {
        case 0xF0...: expected = 4
        case 0xE0...: expected = 3
        case 0xC0...: expected = 2
        default: expected = 1
        }
        return expected > continuationBytes + 1 ? index - 1 : content.count
    }
}
