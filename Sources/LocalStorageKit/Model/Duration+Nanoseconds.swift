/// Durations as the store's clock counts them: whole nanoseconds in 64 bits, saturating instead of wrapping.
extension Duration {
    /// The duration in nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).overflow
            ? .max : scaled + attoseconds / 1_000_000_000
    }
}

extension Duration {
    /// The duration to the nearest millisecond, for messages: a measured one prints as `1.5 seconds`, not as
    /// `1.499778157 seconds`.
    var roundedToMilliseconds: Duration {
        let (seconds, attoseconds) = components
        let milliseconds = (Double(attoseconds) / 1e15).rounded()
        return .seconds(seconds) + .milliseconds(Int64(milliseconds))
    }
}

extension Int64 {
    /// The moment `duration` after this one (nanoseconds since 1970), held at `Int64.max` (or `.min`)
    /// instead of wrapping.
    func advanced(saturatingBy duration: Duration) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(duration.nanoseconds)
        return overflow ? (duration < .zero ? .min : .max) : sum
    }
}
