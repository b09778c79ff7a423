/// An exact number as it appears in an index key: a signed integer, an unsigned integer or a `Double`.
///
/// The three cases describe values on one number line: `.int(5)`, `.uint(5)` and `.double(5.0)` are the
/// same number. Equality and hashing follow that numeric meaning (they agree with ``compare(_:_:)``), so
/// `NumericValue.int(5) == .double(5.0)` is `true` and both hash alike, and `.double(-0.0) == .int(0)`.
///
/// Comparison is exact: big integers are never rounded through `Double`, so `.int(9_007_199_254_740_993)`
/// (2^53 + 1) is greater than `.double(9_007_199_254_740_992)` (2^53).
///
/// `NaN` has no place on the number line. Index keys never contain it (``OrderedKey/encodeNumber(_:)``
/// rejects it), but so that no input can trap, ``compare(_:_:)`` treats every `NaN` as equal to every other
/// `NaN` and greater than every number, including `+infinity`.
internal enum NumericValue: Sendable, Hashable {
    /// A signed 64-bit integer.
    case int(Int64)
    /// An unsigned 64-bit integer (normally only used above `Int64.max`).
    case uint(UInt64)
    /// A binary floating-point number.
    case double(Double)

    /// The value converted to `Double`, rounding to nearest when it is an integer that `Double` cannot hold.
    var doubleValue: Double {
        switch self {
        case .int(let value): return Double(value)
        case .uint(let value): return Double(value)
        case .double(let value): return value
        }
    }

    /// Compares two numbers exactly.
    ///
    /// - Returns: `-1` when `a < b`, `0` when they are the same number and `1` when `a > b`.
    ///   `5` and `5.0` compare equal, as do `-0.0` and `0`. See the type's documentation for `NaN`.
    static func compare(_ a: NumericValue, _ b: NumericValue) -> Int {
        switch (a, b) {
        case (.int(let x), .int(let y)):
            return sign(of: x, comparedTo: y)
        case (.uint(let x), .uint(let y)):
            return sign(of: x, comparedTo: y)
        case (.double(let x), .double(let y)):
            return compare(double: x, double: y)
        case (.int(let x), .uint(let y)):
            return x < 0 ? -1 : sign(of: UInt64(x), comparedTo: y)
        case (.uint(let x), .int(let y)):
            return y < 0 ? 1 : sign(of: x, comparedTo: UInt64(y))
        case (.int(let x), .double(let y)):
            return compare(int: x, double: y)
        case (.double(let x), .int(let y)):
            return -compare(int: y, double: x)
        case (.uint(let x), .double(let y)):
            return compare(uint: x, double: y)
        case (.double(let x), .uint(let y)):
            return -compare(uint: y, double: x)
        }
    }

    /// Numeric equality: `true` when ``compare(_:_:)`` returns `0`, whatever the cases.
    static func == (lhs: NumericValue, rhs: NumericValue) -> Bool {
        compare(lhs, rhs) == 0
    }

    /// Hashes the canonical form of the number, so equal numbers in different cases hash alike.
    func hash(into hasher: inout Hasher) {
        guard let form = OrderedKey.canonicalNumber(self) else {
            hasher.combine(UInt8(0xFF))  // NaN: every NaN is equal to every other NaN.
            return
        }
        hasher.combine(form.tag)
        hasher.combine(form.exponent)
        hasher.combine(form.mantissa)
    }

    /// `-1`, `0` or `1` as `x` is less than, equal to or greater than `y`.
    private static func sign<T: Comparable>(of x: T, comparedTo y: T) -> Int {
        x < y ? -1 : (x > y ? 1 : 0)
    }

    /// Compares two doubles, with `-0.0 == 0.0` and `NaN` above everything and equal to itself.
    private static func compare(double x: Double, double y: Double) -> Int {
        if x.isNaN || y.isNaN {
            return x.isNaN ? (y.isNaN ? 0 : 1) : -1
        }
        return sign(of: x, comparedTo: y)
    }

    /// Compares a signed integer with a double without rounding the integer.
    private static func compare(int x: Int64, double y: Double) -> Int {
        if y.isNaN { return -1 }
        // -2^63 and 2^63 are exact doubles; inside [-2^63, 2^63) truncation of `y` fits in Int64.
        if y < -9_223_372_036_854_775_808.0 { return 1 }
        if y >= 9_223_372_036_854_775_808.0 { return -1 }
        let whole = y.rounded(.towardZero)
        let truncated = Int64(whole)
        if x != truncated { return x < truncated ? -1 : 1 }
        return sign(of: whole, comparedTo: y)
    }

    /// Compares an unsigned integer with a double without rounding the integer.
    private static func compare(uint x: UInt64, double y: Double) -> Int {
        if y.isNaN { return -1 }
        // 2^64 is an exact double; inside [0, 2^64) truncation of `y` fits in UInt64.
        if y < 0 { return 1 }
        if y >= 18_446_744_073_709_551_616.0 { return -1 }
        let whole = y.rounded(.towardZero)
        let truncated = UInt64(whole)
        if x != truncated { return x < truncated ? -1 : 1 }
        return sign(of: whole, comparedTo: y)
    }
}

extension NumericValue: CustomStringConvertible {
    /// The number for display: integers print as integers (`5`), doubles as Swift prints them (`5.0`, `1e+20`).
    var description: String {
        switch self {
        case .int(let value): return String(value)
        case .uint(let value): return String(value)
        case .double(let value): return value.description
        }
    }
}
