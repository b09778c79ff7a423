import Foundation

/// A ``LocalStorable`` type whose stored payloads carry a schema version and migrate on read.
///
/// ```swift
/// struct UserProfile: LocalStorageVersioned {
///     static var currentVersion: Int { 2 }
///     static var migrations: [StorageMigration] {
///         [StorageMigration(from: 1, to: 2) { json in try upgrade(json) }]
///     }
/// }
/// ```
public protocol LocalStorageVersioned: LocalStorable {
    /// The version new records are written at.
    static var currentVersion: Int { get }
    /// The steps from older versions, each turning JSON at `from` into JSON at `to`.
    static var migrations: [StorageMigration] { get }
}

/// One migration step: JSON at version `from` in, JSON at version `to` out.
///
/// The payload is always JSON, whatever codec the store writes, as `JSONEncoder` would produce it.
public struct StorageMigration: Sendable {
    /// The version the step reads.
    public let from: Int
    /// The version the step writes.
    public let to: Int
    let transform: @Sendable (Data) throws -> Data

    /// A step from `from` to `to`.
    public init(from: Int, to: Int, _ transform: @escaping @Sendable (Data) throws -> Data) {
        self.from = from
        self.to = to
        self.transform = transform
    }
}

extension LocalStorable {
    /// The schema version this type writes: `currentVersion`, or 1 when not versioned.
    static var storageVersion: Int {
        (Self.self as? any LocalStorageVersioned.Type)?.currentVersion ?? 1
    }
}
