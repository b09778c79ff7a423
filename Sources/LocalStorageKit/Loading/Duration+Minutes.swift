extension Duration {
    /// A duration of `minutes` minutes, for ``LoadPolicy`` (`refreshAfter: .minutes(10)`).
    public static func minutes(_ minutes: Double) -> Duration { seconds(clamping: minutes * 60) }

    /// A duration of `hours` hours, for ``LoadPolicy`` (`refreshAfter: .hours(1)`).
    public static func hours(_ hours: Double) -> Duration { seconds(clamping: hours * 3600) }

    /// `seconds` as a duration; past what a duration holds (±2⁶³ seconds), the longest one of its sign.
    /// (`Duration.seconds(_:)` stops the process there, for an infinity too.) NaN is the most negative
    /// duration, which ``LoadPolicy`` refuses as it refuses any negative one.
    static func seconds(clamping seconds: Double) -> Duration {
        guard !seconds.isNaN else { return .seconds(Int64.min) }
        // 2⁶³: the first Double past Int64.max.
        if seconds >= 9_223_372_036_854_775_808 { return .seconds(Int64.max) }
        if seconds <= -9_223_372_036_854_775_808 { return .seconds(Int64.min) }
        return .seconds(seconds)
    }
}
