import Foundation

/// How long a saved record stays visible.
///
/// An expired record is invisible to every read except ``LocalStorage/metadata(_:id:)-(_,String)``, whether or
/// not it has been purged yet.
public enum CacheExpiration: Sendable, Hashable {
    /// The record never expires.
    case never
    /// Expires this many seconds after the save.
    case seconds(TimeInterval)
    /// Expires this many minutes after the save.
    case minutes(Double)
    /// Expires this many hours after the save.
    case hours(Double)
    /// Expires this many days after the save.
    case days(Double)
    /// Expires at a fixed moment.
    case date(Date)

    /// The expiry moment in nanoseconds since 1970 for a save at `now`, or 0 for never.
    func expiresAt(now: Int64) -> Int64 {
        let seconds: Double
        switch self {
        case .never: return 0
        case .seconds(let value): seconds = value
        case .minutes(let value): seconds = value * 60
        case .hours(let value): seconds = value * 3600
        case .days(let value): seconds = value * 86_400
        case .date(let date): return Clock.nanoseconds(from: date)
        }
        guard seconds.isFinite else { return seconds > 0 ? 0 : 1 }
        let offset = seconds * 1e9
        if offset >= Double(Int64.max - now) { return 0 }
        // A lifetime reaching back before 1970 (say `.seconds(-1e300)`) would overflow Int64.
        if offset <= -Double(now) { return 1 }
        // A non-positive lifetime expires at once; 1 ns keeps 0 meaning "never".
        return max(1, now + Int64(offset.rounded(.down)))
    }
}
