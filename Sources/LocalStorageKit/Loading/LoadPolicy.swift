/// How ``LocalStorage/fetch(_:id:policy:load:)`` loads, keeps and refreshes a record it does not hold.
///
/// ```swift
/// let policy = LoadPolicy(expiration: .hours(2),     // how long a loaded record lives
///                         refreshAfter: .minutes(10), // older than this: served at once, reloaded behind
///                         absentFor: .seconds(30),    // a nil from the loader is remembered this long
///                         loadTimeout: .seconds(30))  // a load that takes longer is given up
/// ```
/// `LoadPolicy()` keeps loaded records forever, never refreshes them, does not remember a nil from the
/// loader, and gives a load 30 seconds. A duration longer than 100 years counts as 100 years
/// (`loadTimeout: .seconds(Int64.max)` is a load that is never given up in practice). A fetch with a policy
/// whose `loadTimeout` is not positive, or whose `refreshAfter` or `absentFor` is negative (or not a number),
/// throws ``LocalStorageError/invalidQuery(_:)`` before anything is read or loaded.
public struct LoadPolicy: Sendable, Hashable {
    /// How long a loaded record lives (the expiration it is saved with).
    public var expiration: CacheExpiration
    /// A record last updated longer ago than this is returned at once and reloaded in the background
    /// (one reload per id); nil: never refreshed.
    public var refreshAfter: Duration?
    /// How long a nil from the loader is remembered: calls within that time return nil without loading.
    /// Nil: not remembered (the next call loads again).
    public var absentFor: Duration?
    /// How long a load may take: callers waiting on a longer one get
    /// ``LocalStorageError/loadTimedOut(id:)``, and another caller may take the load over.
    public var loadTimeout: Duration

    /// A policy; every argument has the default described on ``LoadPolicy``.
    public init(
        expiration: CacheExpiration = .never, refreshAfter: Duration? = nil, absentFor: Duration? = nil,
        loadTimeout: Duration = .seconds(30)
    ) {
        self.expiration = expiration
        self.refreshAfter = refreshAfter
        self.absentFor = absentFor
        self.loadTimeout = loadTimeout
    }

    /// The longest duration a policy keeps: 100 years. A longer `loadTimeout`, `refreshAfter` or `absentFor`
    /// (`.seconds(Int64.max)` for "no timeout") counts as this, so that a deadline always fits the clock.
    static let longest = Duration.seconds(100 * 365 * 86_400)

    /// Checks the durations: none may be negative, and the timeout must be positive. Durations past
    /// ``longest`` are cut to it.
    func validated() throws(LocalStorageError) -> LoadPolicy {
        if loadTimeout <= .zero {
            throw .invalidQuery("loadTimeout must be positive (got \(Self.describe(loadTimeout)))")
        }
        if let refreshAfter, refreshAfter < .zero {
            throw .invalidQuery("refreshAfter must not be negative (got \(Self.describe(refreshAfter)))")
        }
        if let absentFor, absentFor < .zero {
            throw .invalidQuery("absentFor must not be negative (got \(Self.describe(absentFor)))")
        }
        var policy = self
        policy.loadTimeout = min(loadTimeout, Self.longest)
        policy.refreshAfter = refreshAfter.map { min($0, Self.longest) }
        policy.absentFor = absentFor.map { min($0, Self.longest) }
        return policy
    }

    /// ``validated()``, and an expiration a record saved at `now` can take: a policy a load could not use is
    /// refused before anything is read or loaded for it.
    func validated(at now: Int64) throws -> LoadPolicy {
        let policy = try validated()
        _ = try policy.expiration.expiresAt(now: now)
        return policy
    }

    /// A duration for an error message: `.minutes(.nan)` and `.hours(.nan)` come out as the most negative
    /// duration (see `Duration.seconds(clamping:)`), which says "not a number" rather than -9.2e18 seconds.
    private static func describe(_ duration: Duration) -> String {
        duration == .seconds(Int64.min) ? "not a number, or past what a duration holds" : "\(duration)"
    }
}
