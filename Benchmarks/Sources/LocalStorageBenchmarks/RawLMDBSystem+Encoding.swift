import Foundation

/// The byte layouts the raw LMDB system writes: ordered doubles, big- and little-endian integers, and the
/// wall clock its expiry is measured in.
extension RawLMDBSystem {
    /// A Double as a UInt64 whose unsigned order is the Double's order.
    static func ordered(_ value: Double) -> UInt64 {
        let bits = value.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    static func orderedBytes(_ value: Double) -> [UInt8] {
        withUnsafeBytes(of: ordered(value).bigEndian) { Array($0) }
    }

    static func loadBigEndian(_ key: UnsafeRawBufferPointer) -> UInt64 {
        UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    static func appendLittleEndian(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Wall-clock nanoseconds since 1970, the clock record expiry is measured in.
    static func wallClock() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
