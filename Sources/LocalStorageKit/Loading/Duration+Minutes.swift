extension Duration {
    /// A duration of `minutes` minutes, for ``LoadPolicy`` (`refreshAfter: .minutes(10)`).
    public static func minutes(_ minutes: Double) -> Duration { .seconds(minutes * 60) }

    /// A duration of `hours` hours, for ``LoadPolicy`` (`refreshAfter: .hours(1)`).
    public static func hours(_ hours: Double) -> Duration { .seconds(hours * 3600) }
}
