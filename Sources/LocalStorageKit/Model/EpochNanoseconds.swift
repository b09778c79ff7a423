import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wall-clock time as nanoseconds since 1970, the unit of every timestamp on disk.
enum EpochNanoseconds {
    /// Now, in nanoseconds since 1970.
    static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }

    /// A date as nanoseconds since 1970, clamped to what fits (before 1970 is 1 ns, so never 0).
    static func nanoseconds(from date: Date) -> Int64 {
        let value = date.timeIntervalSince1970 * 1e9
        guard value.isFinite else { return value > 0 ? Int64.max : 1 }
        if value >= 9.2e18 { return Int64.max }
        // Before 1970 (`Date.distantPast` is -6.3e19 ns, below Int64.min) is already expired.
        if value < 1 { return 1 }
        return Int64(value)
    }

    /// Nanoseconds since 1970 as a date.
    static func date(fromNanoseconds value: Int64) -> Date {
        Date(timeIntervalSince1970: Double(value) / 1e9)
    }
}
