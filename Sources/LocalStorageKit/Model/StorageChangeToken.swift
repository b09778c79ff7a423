/// A position in the store's change log: what ``LocalStorage/changeToken()`` returns and
/// ``LocalStorage/changes(of:since:)`` reads from.
///
/// Codable, so that it can be kept across launches (in the store itself, in `UserDefaults`, in a file),
/// and comparable: a later token is greater. It is valid for any process on the same store.
public struct StorageChangeToken: Codable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The sequence number of the last change this position includes (0: before the first).
    let sequence: UInt64

    init(sequence: UInt64) {
        self.sequence = sequence
    }

    /// Whether `lhs` is an earlier position in the change log than `rhs`.
    public static func < (lhs: StorageChangeToken, rhs: StorageChangeToken) -> Bool { lhs.sequence < rhs.sequence }

    /// The position's sequence number, for logs: `StorageChangeToken(42)`.
    public var description: String { "StorageChangeToken(\(sequence))" }
}
