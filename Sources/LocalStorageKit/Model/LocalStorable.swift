import Foundation

/// A Codable value that a ``LocalStorage`` can cache.
///
/// Conform your model and give it an `id`: a `String`, any integer type, a `UUID` (keyed by its
/// `uuidString`) or any `LosslessStringConvertible` type (keyed by its `description`). Records are keyed
/// by that string under ``storageName``, and every call that takes an id takes the model's own `ID` too.
///
/// ```swift
/// struct Product: LocalStorable {
///     let id: String
///     var title: String
/// }
/// struct Session: LocalStorable {
///     let id: UUID
///     var user: String
/// }
/// try await storage.save(product, expiration: .hours(2))
/// let session = try await storage.fetch(Session.self, id: sessionID)
/// ```
public protocol LocalStorable: Codable, Sendable, Identifiable where ID: Sendable {
    /// The name records of this type are stored under; defaults to the type's bare name (`"Product"`, without
    /// its module or enclosing types), so two types of the same name in different modules or enclosing types
    /// share storage unless one of them names its own.
    ///
    /// Changing it makes earlier records of the type invisible (they stay under the old name).
    static var storageName: String { get }

    /// Bounds on how many records of this type, and how many payload bytes, the store keeps; nil (the
    /// default) for none beyond the store's own ``LocalStorageConfiguration/limits``.
    ///
    /// ```swift
    /// static var storageLimits: StorageLimits? { StorageLimits(maxRecords: 1_000) }
    /// ```
    static var storageLimits: StorageLimits? { get }
}

extension LocalStorable {
    /// The type's name, as `String(describing:)` spells it: `"Product"`.
    public static var storageName: String { String(describing: Self.self) }

    /// No limits of the type's own.
    public static var storageLimits: StorageLimits? { nil }

    /// The record key of this value: its id as a string.
    ///
    /// - Throws: `invalidId` when the id's type is none of the supported kinds.
    func storageID() throws(LocalStorageError) -> String { try StorageKey.string(for: id) }
}

/// How a model's id becomes the string its record is keyed by.
enum StorageKey {
    /// `id` as a record key: a `String` as it is, a `UUID` by its `uuidString`, any other
    /// `LosslessStringConvertible` (every integer type among them) by its `description`.
    ///
    /// - Throws: `invalidId` for any other type, whose text form need not tell its values apart.
    static func string<ID>(for id: ID) throws(LocalStorageError) -> String {
        // A `String` id, the common case, without a dynamic cast.
        if ID.self == String.self { return unsafeBitCast(id, to: String.self) }
        switch id {
        case let id as String: return id
        case let id as UUID: return id.uuidString
        case let id as any LosslessStringConvertible: return id.description
        default:
            throw .invalidId(
                "\(ID.self) cannot key a record: use a String, an integer, a UUID or a "
                    + "LosslessStringConvertible type as the id")
        }
    }

    /// `ids` as record keys (``string(for:)``); string ids, the common case, are taken as they are, the array
    /// itself (`as? [String]` would cast it element by element).
    static func strings<ID>(for ids: [ID]) throws(LocalStorageError) -> [String] {
        if ID.self == String.self { return unsafeBitCast(ids, to: [String].self) }
        return try ids.map { id throws(LocalStorageError) in try string(for: id) }
    }
}
