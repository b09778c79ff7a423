/// The operations of a ``LocalStorage`` bound to one type, without the type argument.
///
/// ```swift
/// let repository = storage.repository(Product.self)
/// try await repository.save(product, expiration: .days(1))
/// let product = try await repository.fetch(id: "sku_108")
/// ```
public struct LocalRepository<T: LocalStorable>: Sendable {
    /// The store this repository reads and writes.
    public let storage: LocalStorage

    init(storage: LocalStorage) { self.storage = storage }

    /// Saves `value`, replacing any record with its id.
    nonisolated(nonsending) public func save(_ value: T, expiration: CacheExpiration = .never) async throws {
        try await storage.save(value, expiration: expiration)
    }

    /// Saves every value in one transaction.
    public func save<S: Sequence & Sendable>(
        contentsOf values: S, expiration: CacheExpiration = .never
    )
        async throws where S.Element == T
    {
        try await storage.save(contentsOf: values, expiration: expiration)
    }

    /// The record with `id`, or nil when it is absent or expired.
    nonisolated(nonsending) public func fetch(id: String) async throws -> T? { try await storage.fetch(T.self, id: id) }

    /// Live records in `options.sort` order.
    nonisolated(nonsending) public func fetch(options: FetchOptions = FetchOptions()) async throws -> [T] {
        try await storage.fetch(T.self, options: options)
    }

    /// The number of live records.
    nonisolated(nonsending) public func count() async throws -> Int { try await storage.count(T.self) }

    /// What the store knows about a record; returns expired records too until purged.
    nonisolated(nonsending) public func metadata(id: String) async throws -> StorageMetadata? {
        try await storage.metadata(T.self, id: id)
    }

    /// Deletes the record with `id`; a missing id does nothing.
    nonisolated(nonsending) public func delete(id: String) async throws { try await storage.delete(T.self, id: id) }

    /// Deletes every record of the type.
    nonisolated(nonsending) public func deleteAll() async throws { try await storage.deleteAll(T.self) }

    /// Changes a record's time to live. - Throws: `notFound(id:)`.
    nonisolated(nonsending) public func setExpiration(id: String, _ expiration: CacheExpiration) async throws {
        try await storage.setExpiration(T.self, id: id, expiration)
    }

    /// Reads, mutates and writes a record in one transaction. - Throws: `notFound(id:)`.
    @discardableResult
    nonisolated(nonsending) public func update(
        id: String, _ mutate: @escaping @Sendable (inout T) throws -> Void
    ) async throws -> T {
        try await storage.update(T.self, id: id, mutate)
    }
}
