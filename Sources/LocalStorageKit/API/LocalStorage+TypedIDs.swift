// Overloads that take a model's own `ID` type (an `Int`, a `UUID` …) where the main API takes the id's
// string form (see `StorageKey`). They are disfavoured so that a string literal still picks the `String`
// versions.

extension LocalStorage {
    /// The record whose id is `id`, or nil when it is absent or expired.
    @_disfavoredOverload
    nonisolated(nonsending) public func fetch<T: LocalStorable>(_ type: T.Type, id: T.ID) async throws -> T? {
        try await fetch(type, id: try StorageKey.string(for: id))
    }

    /// What the store knows about the record whose id is `id`.
    @_disfavoredOverload
    nonisolated(nonsending) public func metadata<T: LocalStorable>(
        _ type: T.Type, id: T.ID
    ) async throws -> StorageMetadata? {
        try await metadata(type, id: try StorageKey.string(for: id))
    }

    /// Deletes the record whose id is `id`; a missing id does nothing.
    @_disfavoredOverload
    nonisolated(nonsending) public func delete<T: LocalStorable>(_ type: T.Type, id: T.ID) async throws {
        try await delete(type, id: try StorageKey.string(for: id))
    }

    /// Changes the time to live of the record whose id is `id`. - Throws: `notFound(id:)`.
    @_disfavoredOverload
    nonisolated(nonsending) public func setExpiration<T: LocalStorable>(
        _ type: T.Type, id: T.ID,
        _ expiration: CacheExpiration
    ) async throws {
        try await setExpiration(type, id: try StorageKey.string(for: id), expiration)
    }

    /// Reads, mutates and writes the record whose id is `id` in one transaction; `mutate` runs exactly once
    /// and its own error comes out unchanged. - Throws: `notFound(id:)`.
    @_disfavoredOverload
    @discardableResult
    nonisolated(nonsending) public func update<T: LocalStorable>(
        _ type: T.Type, id: T.ID,
        _ mutate: @escaping @Sendable (inout T) throws -> Void
    ) async throws -> T {
        try await update(type, id: try StorageKey.string(for: id), mutate)
    }
}

extension LocalRepository {
    /// The record whose id is `id`, or nil when it is absent or expired.
    @_disfavoredOverload
    nonisolated(nonsending) public func fetch(id: T.ID) async throws -> T? {
        try await fetch(id: try StorageKey.string(for: id))
    }

    /// What the store knows about the record whose id is `id`.
    @_disfavoredOverload
    nonisolated(nonsending) public func metadata(id: T.ID) async throws -> StorageMetadata? {
        try await metadata(id: try StorageKey.string(for: id))
    }

    /// Deletes the record whose id is `id`; a missing id does nothing.
    @_disfavoredOverload
    nonisolated(nonsending) public func delete(id: T.ID) async throws {
        try await delete(id: try StorageKey.string(for: id))
    }

    /// Changes the time to live of the record whose id is `id`. - Throws: `notFound(id:)`.
    @_disfavoredOverload
    nonisolated(nonsending) public func setExpiration(id: T.ID, _ expiration: CacheExpiration) async throws {
        try await setExpiration(id: try StorageKey.string(for: id), expiration)
    }

    /// Reads, mutates and writes the record whose id is `id` in one transaction. - Throws: `notFound(id:)`.
    @_disfavoredOverload
    @discardableResult
    nonisolated(nonsending) public func update(
        id: T.ID, _ mutate: @escaping @Sendable (inout T) throws -> Void
    ) async throws -> T {
        try await update(id: try StorageKey.string(for: id), mutate)
    }
}
