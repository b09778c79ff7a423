// Overloads that take a model's own `ID` type (an `Int`, a `UUID` …) where the main API takes the id's
// string form. They are disfavoured so that a string literal still picks the `String` versions.

extension LocalStorage {
    /// The record whose id is `id`, or nil when it is absent or expired.
    @_disfavoredOverload
    public func fetch<T: LocalStorable>(_ type: T.Type, id: T.ID) async throws -> T? {
        try await fetch(type, id: id.description as String)
    }

    /// What the store knows about the record whose id is `id`.
    @_disfavoredOverload
    public func metadata<T: LocalStorable>(_ type: T.Type, id: T.ID) async throws -> StorageMetadata? {
        try await metadata(type, id: id.description as String)
    }

    /// Deletes the record whose id is `id`; a missing id does nothing.
    @_disfavoredOverload
    public func delete<T: LocalStorable>(_ type: T.Type, id: T.ID) async throws {
        try await delete(type, id: id.description as String)
    }
}

extension LocalRepository {
    /// The record whose id is `id`, or nil when it is absent or expired.
    @_disfavoredOverload
    public func fetch(id: T.ID) async throws -> T? { try await fetch(id: id.description as String) }

    /// What the store knows about the record whose id is `id`.
    @_disfavoredOverload
    public func metadata(id: T.ID) async throws -> StorageMetadata? {
        try await metadata(id: id.description as String)
    }

    /// Deletes the record whose id is `id`; a missing id does nothing.
    @_disfavoredOverload
    public func delete(id: T.ID) async throws { try await delete(id: id.description as String) }
}
