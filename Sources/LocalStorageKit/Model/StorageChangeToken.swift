/// A position in the store's change log: what ``LocalStorage/changeToken()`` returns and
/// ``LocalStorage/changes(of:since:)`` reads from.
///
/// Codable, so that it can be kept across launches (in the store itself, in `UserDefaults`, in a file),
/// and comparable: a later token of one store is greater. It is valid for any process on the same store,
/// and only there: it carries the store's identity (a random number the store keeps from its creation),
/// so a token of another store, or of a store deleted and created again since, throws
/// ``LocalStorageError/changeTokenExpired``. A token encoded by an earlier version has no identity and
/// throws the same: the caller reloads in full once and takes a new token.
public struct StorageChangeToken: Codable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The sequence number of the last change this position includes (0: before the first).
    let sequence: UInt64
    /// The identity of the store the position belongs to (nil in a token encoded by an earlier version).
    let store: UInt64?

    init(sequence: UInt64, store: UInt64?) {
        self.sequence = sequence
        self.store = store
    }

    /// Whether `lhs` is an earlier position in the change log than `rhs`. Tokens of one store compare by
    /// position; tokens of different stores have no meaningful order, and compare by store identity after
    /// position, so that the order stays total.
    public static func < (lhs: StorageChangeToken, rhs: StorageChangeToken) -> Bool {
        (lhs.sequence, lhs.store ?? 0) < (rhs.sequence, rhs.store ?? 0)
    }

    /// The position's sequence number, for logs: `StorageChangeToken(42)`.
    public var description: String { "StorageChangeToken(\(sequence))" }
}
