/// The one seam between the public methods and the tiers (docs/DESIGN.md, "Layers: folders by concept").
///
/// A store opens one stack of record stores, chosen once from its configuration (``TierStack``):
/// ``LocalRecordStore`` (the LMDB store: the writer thread and the readers over ``StoreCore``), with
/// ``MemoryTierRecordStore`` layered over it when ``LocalStorageConfiguration/memoryCache`` is set, and
/// ``SharedTierRecordStore`` over that when ``LocalStorageConfiguration/sharedTier`` is set. Each layer does
/// its own part of an operation and forwards the rest to the layer below it. A public method validates its
/// input, resolves the type's schema and calls one method here; it never knows which tiers there are.
///
/// Ids arrive validated (`key` is the id's UTF-8, a valid record key) and types registered (`schema`).
protocol RecordStore: Sendable {
    // MARK: Reads

    /// Returns when local records may be served: at once, except behind a shared tier that is catching up
    /// or stale (``SharedTier/awaitSettled()``).
    nonisolated(nonsending) func settle() async throws

    /// The live record `id` of `T`, or nil when it is absent or expired.
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, id: String, schema: TypeSchema
    ) async throws -> T?

    /// The live record `id` of `T` when the store can answer from memory at once, as it is held there (open
    /// it with ``MemoryTier/unwrap(_:as:)``); nil, counting nothing, when ``fetch(_:id:schema:)`` must answer.
    ///
    /// Synchronous, so that a hit of the memory tier costs no asynchronous frames (about a tenth of it).
    func heldValue<T: LocalStorable>(_ type: T.Type, id: String, schema: TypeSchema) -> (any Sendable)?

    /// What the store knows about the record `id` (also when it is expired), or nil when it is absent.
    nonisolated(nonsending) func metadata<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema
    ) async throws -> StorageMetadata?

    /// The live records among `ids`, keyed by id; absent and expired ids are left out.
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, ids: [T.ID], schema: TypeSchema
    ) async throws -> [T.ID: T]

    // MARK: Queries

    /// The records of `T` that `plan` matches, read where `options.scope` says: locally (after the
    /// migrations and re-indexing the type may need) or, behind a shared tier, on the server.
    ///
    /// - Throws: `invalidQuery` for `.shared` without a shared tier.
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, options: FetchOptions, schema: TypeSchema
    ) async throws -> [T]

    /// The number of live records of `T` that `plan` matches, counted where `scope` says (as
    /// ``fetch(_:plan:options:schema:)``).
    nonisolated(nonsending) func count<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, scope: FetchOptions.Scope?, schema: TypeSchema
    ) async throws -> Int

    /// One page of the records `plan` matches, read where `options.scope` says (as
    /// ``fetch(_:plan:options:schema:)``); `page` and `pageSize` are valid.
    nonisolated(nonsending) func page<T: LocalStorable>(
        _ type: T.Type, plan: QueryPlan, page: Int, pageSize: Int, options: FetchOptions, schema: TypeSchema
    ) async throws -> StoragePage<T>

    // MARK: Loading through the cache

    /// The live record `id` of `T`, or what `load` returns for it (stored under `policy`), loaded once among
    /// the callers of every process on the store and, behind a shared tier, every instance (``LoadThrough``).
    ///
    /// - Throws: the loader's own error as a ``CallerError``; `loadTimedOut(id:)`.
    nonisolated(nonsending) func fetch<T: LocalStorable>(
        _ type: T.Type, id: T.ID, policy: LoadPolicy, schema: TypeSchema,
        load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T?

    // MARK: Writes

    /// Saves one record, replacing the one with its id.
    nonisolated(nonsending) func save(
        _ record: PreparedRecord, expiration: CacheExpiration, schema: TypeSchema) async throws

    /// Saves records sorted by key (a repeated id once, its last value) in one commit: all or none.
    nonisolated(nonsending) func save(
        contentsOf records: [PreparedRecord], expiration: CacheExpiration, schema: TypeSchema) async throws

    /// Deletes the record `id`; a missing one is no error.
    nonisolated(nonsending) func delete(id: String, key: [UInt8], schema: TypeSchema) async throws

    /// Deletes every record of the type.
    nonisolated(nonsending) func deleteAll(schema: TypeSchema) async throws

    /// Deletes every live record of `T` the filters match; returns how many. `locally` is the local store's
    /// deletion, in one commit when it fits, else in parts (``LocalStorage/delete(_:matching:)``, which the writer
    /// runs with the public types); a shared tier replaces it by deletes through the server, in one local commit.
    nonisolated(nonsending) func delete<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], schema: TypeSchema,
        locally: () async throws -> Int
    ) async throws -> Int

    /// Changes the time to live of the live record `id`.
    ///
    /// - Throws: `notFound(id:)` when it is absent or expired.
    nonisolated(nonsending) func setExpiration<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], _ expiration: CacheExpiration, schema: TypeSchema
    ) async throws

    /// Reads the live record `id`, runs `mutate` on it exactly once and writes the result; returns it.
    ///
    /// - Throws: `notFound(id:)`; `invalidId` when `mutate` changes the id; what `mutate` throws, as a
    ///   ``CallerError`` (nothing is written then).
    nonisolated(nonsending) func update<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema,
        _ mutate: @escaping @Sendable (inout T) throws -> Void
    ) async throws -> T

    // MARK: What the tiers allow and count

    /// Throws when a `write { }` (`writes`) or `read { }` transaction cannot run: behind a shared tier,
    /// `sharedTierUnavailable` (its body runs inside a local transaction, which cannot wait for the server, and
    /// a local snapshot would answer nil for records only the server holds).
    func checkTransaction(writes: Bool) throws

    /// Fetches by id the memory tier answered, and those it did not, since the store opened (0 without one).
    var memoryCounts: (hits: Int, misses: Int) { get }

    // MARK: Lifetime

    /// Stops what the layer runs in the background (the shared tier's connections). Called once, when the
    /// store closes.
    func close()
}
