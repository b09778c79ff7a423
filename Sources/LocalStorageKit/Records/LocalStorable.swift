/// A Codable value that a ``LocalStorage`` can cache.
///
/// Conform your model and give it an `id`; the store keys records by `String(describing: id)`
/// under ``storageName``.
///
/// ```swift
/// struct Product: LocalStorable {
///     let id: String
///     var title: String
/// }
/// try await storage.save(product, expiration: .hours(2))
/// ```
public protocol LocalStorable: Codable, Sendable, Identifiable
    where ID: LosslessStringConvertible & Sendable {
    /// The name records of this type are stored under; defaults to the type's name.
    ///
    /// Changing it makes earlier records of the type invisible (they stay under the old name).
    static var storageName: String { get }
}

extension LocalStorable {
    public static var storageName: String { String(describing: Self.self) }

    /// The record key of this value: its id as a string.
    var storageID: String { id.description }
}
