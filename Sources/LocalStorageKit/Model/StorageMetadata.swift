import Foundation

/// What the store knows about one record besides its value.
public struct StorageMetadata: Sendable, Hashable {
    /// When the record was first saved (kept across re-saves).
    public let createdAt: Date
    /// When the record was last saved or updated.
    public let updatedAt: Date
    /// When the record expires; nil for never.
    public let expiresAt: Date?
    /// The size of the stored payload in bytes (header excluded).
    public let sizeInBytes: Int
    /// Whether the record has expired (it stays visible here until purged).
    public let isExpired: Bool
    /// The schema version the payload is stored at.
    public let version: Int
}
