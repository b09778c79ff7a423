extension Array where Element == UInt8 {
    /// Appends an integer's little-endian bytes.
    @inline(__always)
    mutating func appendLittleEndian<I: FixedWidthInteger>(_ value: I) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    /// Appends an integer's big-endian bytes (order-preserving for unsigned values).
    @inline(__always)
    mutating func appendBigEndian<I: FixedWidthInteger>(_ value: I) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
