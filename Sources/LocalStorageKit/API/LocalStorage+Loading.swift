// Loading through the cache: `fetch(_:id:expiration:load:)` and `fetch(_:id:policy:load:)`.

extension LocalStorage {
    /// The record with `id`, loaded by `load`, saved with `expiration` and returned when the store does
    /// not hold it live; concurrent callers never load one id twice.
    ///
    /// ```swift
    /// let product = try await storage.fetch(Product.self, id: "sku_108", expiration: .hours(2)) { id in
    ///     try await catalog.product(id: id)              // Product?; nil: the source has none
    /// }
    /// ```
    /// The same as ``fetch(_:id:policy:load:)`` with `LoadPolicy(expiration: expiration)`.
    /// - Throws: what `load` throws, unchanged; ``LocalStorageError/loadTimedOut(id:)`` when the load
    ///   takes longer than 30 seconds; `CancellationError` when the calling task is cancelled while it waits
    ///   (the load goes on for the others); the errors of ``fetch(_:id:)-(_,String)`` and ``save(_:expiration:)``.
    nonisolated(nonsending) public func fetch<T: LocalStorable>(
        _ type: T.Type, id: T.ID, expiration: CacheExpiration = .never,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        try await fetch(type, id: id, policy: LoadPolicy(expiration: expiration), load: load)
    }

    /// The record with `id`, loaded by `load` when the store does not hold it live, under `policy`.
    ///
    /// ```swift
    /// let policy = LoadPolicy(expiration: .hours(2), refreshAfter: .minutes(10), absentFor: .seconds(30))
    /// let fresh = try await storage.fetch(Product.self, id: "sku_108", policy: policy) { id in
    ///     try await catalog.product(id: id)
    /// }
    /// ```
    /// A live record is returned without calling `load`. Otherwise `load` runs **once** however many tasks
    /// of this process, and processes on the store, ask for the id at once: the first caller takes a
    /// lease recorded in the store and loads; the others wait for its result (through the store's change
    /// log) and receive the same record. Callers in this process waiting on a load that fails get its
    /// error; nothing is stored then. If the process holding a lease dies, another caller takes over
    /// within ``LoadPolicy/loadTimeout`` (at once when the holder ran on this host). With a shared tier the
    /// lease is taken on the server too, so `load` runs once among all the instances on it.
    ///
    /// A `save`, `delete`, `update` or `setExpiration` of the id committed while the load runs wins: the
    /// load's result is not stored, and the callers get what the store holds after that write as soon as it commits (the
    /// loader is cancelled; what it returns or throws afterwards is dropped).
    ///
    /// With ``LoadPolicy/refreshAfter``, a record last updated longer ago is returned at once and reloaded
    /// in the background (one reload per id; a failed reload is logged and keeps the record). With
    /// ``LoadPolicy/absentFor``, a nil from `load` is remembered: calls within that time return nil without
    /// loading. The remembered nil is no record: counts, queries, metadata and exports never see it.
    /// - Throws: what `load` throws, unchanged; ``LocalStorageError/loadTimedOut(id:)`` to the callers
    ///   waiting on a load that takes longer than the policy's timeout; `invalidId` when `load` returns a
    ///   record with another id; `CancellationError` when the calling task is cancelled while it waits (the
    ///   load goes on for the others); `invalidQuery` for a policy whose `loadTimeout` is not positive or whose
    ///   `refreshAfter` or `absentFor` is negative, and `invalidExpiration` for one whose expiration no record
    ///   can take, before anything is read or loaded; the errors of ``fetch(_:id:)-(_,String)`` and
    ///   ``save(_:expiration:)``.
    nonisolated(nonsending) public func fetch<T: LocalStorable>(
        _ type: T.Type, id: T.ID, policy: LoadPolicy, load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        try await operationPassingCallerErrors("fetch(load:)") {
            let schema = try await core.schema(for: T.self)
            return try await tiers.fetch(T.self, id: id, policy: policy, schema: schema, load: load)
        }
    }
}

extension LocalRepository {
    /// The record with `id`, loaded by `load` and saved with `expiration` when the store does not hold it
    /// live (see ``LocalStorage/fetch(_:id:expiration:load:)``).
    nonisolated(nonsending) public func fetch(
        id: T.ID, expiration: CacheExpiration = .never, load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        try await storage.fetch(T.self, id: id, expiration: expiration, load: load)
    }

    /// The record with `id`, loaded by `load` under `policy` when the store does not hold it live (see
    /// ``LocalStorage/fetch(_:id:policy:load:)``).
    nonisolated(nonsending) public func fetch(
        id: T.ID, policy: LoadPolicy, load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        try await storage.fetch(T.self, id: id, policy: policy, load: load)
    }
}
