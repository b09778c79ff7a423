extension Duration {
    /// A duration of `minutes` minutes, for ``LoadPolicy`` (`refreshAfter: .minutes(10)`).
    public static func minutes(_ minutes: Double) -> Duration { .seconds(minutes * 60) }

    /// A duration of `hours` hours, for ``LoadPolicy`` (`refreshAfter: .hours(1)`).
    public static func hours(_ hours: Double) -> Duration { .seconds(hours * 3600) }

    /// The duration in nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).overflow
            ? .max : scaled + attoseconds / 1_000_000_000
    }
}

extension Int64 {
    /// The moment `duration` after this one (nanoseconds since 1970), held at `Int64.max` instead of wrapping.
    func advanced(saturatingBy duration: Duration) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(duration.nanoseconds)
        return overflow ? (duration < .zero ? .min : .max) : sum
    }
}
