import Foundation

/// How long a saved record stays visible.
///
/// An expired record is invisible to every read except ``LocalStorage/metadata(_:id:)-(_,String)``, whether or
/// not it has been purged yet.
///
/// A lifetime counts from the commit that writes the record (the moment its transaction starts on the
/// store's writer), not from the call or from the moment the call returns: every record of one
/// ``LocalStorage/save(contentsOf:expiration:)`` expires at the same moment, and a batch whose commit takes
/// longer than its lifetime is already expired when the call returns.
///
/// A lifetime of zero or less (`.seconds(-1)`), or a date already past, saves the record already expired.
/// A value that is not finite (`.seconds(.nan)`, `.seconds(.infinity)`) or a moment outside what the store
/// keeps (before 1677-09-21 or after 2262-04-11, such as `.seconds(-1e300)` or `.date(.distantFuture)`)
/// throws ``LocalStorageError/invalidExpiration(_:)`` and writes nothing: use ``never`` for no expiry.
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
    ///
    /// A lifetime of zero or less, or a date already past, gives a moment in the past: the record is
    /// expired at once (1 ns keeps 0 meaning "never").
    ///
    /// - Throws: ``LocalStorageError/invalidExpiration(_:)`` for a value that is not finite (NaN, infinite),
    ///   or a moment the store cannot keep: before 1677-09-21 or after 2262-04-11 (nanoseconds since 1970
    ///   in 64 bits). Use ``never`` for a record that does not expire.
    func expiresAt(now: Int64) throws(LocalStorageError) -> Int64 {
        let seconds: Double
        let unit: String
        let given: Double
        switch self {
        case .never: return 0
        case .seconds(let value): (seconds, unit, given) = (value, "\(value) seconds", value)
        case .minutes(let value): (seconds, unit, given) = (value * 60, "\(value) minutes", value)
        case .hours(let value): (seconds, unit, given) = (value * 3600, "\(value) hours", value)
        case .days(let value): (seconds, unit, given) = (value * 86_400, "\(value) days", value)
        case .date(let date):
            let moment = date.timeIntervalSince1970 * 1e9
            // Every moment 64 bits of nanoseconds hold (−2⁶³ ..< 2⁶³ as a Double), as the message says (review-90 N1:
            // a margin of 9.2e18 refused dates from 2261-07-15 on).
            guard moment.isFinite, moment >= -0x1p63, moment < 0x1p63 else {
                throw .invalidExpiration(
                    "the date \(date.timeIntervalSince1970) s since 1970 is not a moment the store can keep "
                        + "(1677-09-21 to 2262-04-11); use .never for a record that does not expire")
            }
            return max(1, Int64(moment.rounded(.down)))
        }
        let offset = seconds * 1e9
        guard given.isFinite else {
            throw .invalidExpiration("a lifetime of \(unit) is not a finite time; use .never for no expiry")
        }
        guard offset.isFinite else { throw CacheExpiration.outOfRange(unit) }
        // Whole nanoseconds when the offset fits 64 bits; past that (centuries) a Double sum is exact enough.
        let exact = offset >= -0x1p63 && offset < 0x1p63
        let sum = exact ? now.addingReportingOverflow(Int64(offset.rounded(.down))) : (partialValue: 0, overflow: true)
        let approximate = Double(now) + offset
        guard !sum.overflow || (approximate >= -0x1p63 && approximate < 0x1p63) else {
            throw CacheExpiration.outOfRange(unit)
        }
        let moment = sum.overflow ? Int64(approximate.rounded(.down)) : sum.partialValue
        return max(1, moment)
    }

    /// The error for a finite lifetime that ends outside the moments the store can keep.
    private static func outOfRange(_ unit: String) -> LocalStorageError {
        .invalidExpiration(
            "a lifetime of \(unit) ends outside the moments the store can keep (1677-09-21 to 2262-04-11); "
                + "use .never for a record that does not expire")
    }
}
