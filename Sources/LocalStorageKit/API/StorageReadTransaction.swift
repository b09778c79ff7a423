/// One consistent snapshot of the store for several reads, valid only inside the closure of
/// ``LocalStorage/read(_:)`` that receives it.
///
/// ```swift
/// let (user, posts) = try await storage.read { tx in
///     (try tx.fetch(User.self, id: "u1"), try tx.fetch(Post.self, matching: [.equals("author", "u1")]))
/// }
/// ```
/// Every method takes the same arguments and gives the same results as the ``LocalStorage`` method of
/// the same name, synchronously, from the one snapshot. Using a transaction after its closure returned
/// throws `invalidQuery`.
public class StorageReadTransaction {
    let storage: LocalStorage
    let txn: Transaction
    let now: Int64
    private var isOpen = true
    /// Whether this body may ask to start again after migrating or re-indexing a type (see
    /// ``RestartAfterPreparing``); registering a type always may (it converges: the next snapshot has it).
    let mayPrepare: Bool
    /// What the read must do before the body can run as asked; the body runs again after it.
    private(set) var preparation: [@Sendable () async throws -> Void] = []
    /// Whether ``preparation`` migrates or re-indexes (the rounds of those are bounded).
    private(set) var preparesIndexes = false
    /// What the read leaves for the writer: migrated records, expired ones to purge.
    private(set) var afterReads: [() -> Void] = []
    /// The schemas this transaction resolved.
    private var schemas: [ObjectIdentifier: TypeSchema] = [:]

    /// ``StoreCore/schemaGeneration`` noted before the transaction began: the schemas it may use.
    let schemaGeneration: Int

    init(storage: LocalStorage, txn: Transaction, now: Int64, schemaGeneration: Int, mayPrepare: Bool = true) {
        self.storage = storage
        self.schemaGeneration = schemaGeneration
        self.txn = txn
        self.now = now
        self.mayPrepare = mayPrepare
    }

    /// Ends the transaction: every later call throws.
    func close() { isOpen = false }

    // MARK: - What reads and writes differ in

    /// `T`'s schema: the one this process registered before the transaction began, or a preparation step (a
    /// read transaction cannot register a type, nor use the handles of one registered since it began).
    func resolveSchema<T: LocalStorable>(_ type: T.Type) throws -> TypeSchema {
        guard let schema = storage.core.cachedSchema(for: T.self, readyBy: schemaGeneration) else {
            let storage = self.storage
            return try prepare { _ = try await storage.core.schema(for: T.self) }
        }
        return schema
    }

    /// Makes the index entries of `T` fit for a query: a read asks to migrate or re-index first.
    func prepareIndexedRead<T: LocalStorable>(_ type: T.Type, schema: TypeSchema) throws {
        guard mayPrepare else {
            // After its rounds, a read answers as `fetch(_:matching:)` does: with the problem that left records
            // stale, if a re-index recorded one.
            if try Reindexer<T>.hasStaleRecords(schema: schema, txn: txn) {
                _ = try schema.runtime.reindexFirst(at: txn.id, mayRetry: false)
            }
            return
        }
        let storage = self.storage
        if storage.core.isMigrationPending(schema.name) {
            preparesIndexes = true
            let _: Void = try prepare { try await storage.local.migrateIfPending(T.self, schema: schema) }
        }
        if try Reindexer<T>.hasStaleRecords(schema: schema, txn: txn), try schema.runtime.reindexFirst(at: txn.id) {
            preparesIndexes = true
            let _: Void = try prepare { try await storage.local.reindex(T.self, schema: schema) }
        }
    }

    /// Leaves what a read found for later: write-backs and purges go to the writer after the read.
    func finish(_ session: DecodeSession, expired: [[UInt8]], purge: Bool, schema: TypeSchema) throws {
        let storage = self.storage
        afterReads.append { storage.afterRead(session: session, expired: expired, purge: purge, schema: schema) }
    }

    private func prepare<R>(_ step: @escaping @Sendable () async throws -> Void) throws -> R {
        preparation.append(step)
        throw RestartAfterPreparing()
    }

    // MARK: - Running a call

    /// Runs one call of the public API: checks the transaction is open and maps internal errors.
    func run<R>(_ body: () throws -> R) throws -> R {
        guard isOpen else {
            throw LocalStorageError.invalidQuery("a transaction was used outside the closure that received it")
        }
        do {
            return try body()
        } catch let error as RestartAfterPreparing {
            throw error
        } catch {
            throw mapped(error)
        }
    }

    /// The public form of an error of the store.
    func mapped(_ error: any Error) -> any Error { LocalStorageError.wrapping(error) }

    func schema<T: LocalStorable>(_ type: T.Type) throws -> TypeSchema {
        let key = ObjectIdentifier(type)
        if let schema = schemas[key] { return schema }
        let schema = try resolveSchema(type)
        schemas[key] = schema
        return schema
    }

    // MARK: - Reads

    /// The record with `id`, or nil when it is absent or expired.
    public func fetch<T: LocalStorable>(_ type: T.Type, id: String) throws -> T? {
        try run {
            let schema = try schema(T.self)
            let key = try RecordWriter.key(for: id)
            let session = storage.makeDecodeSession(for: schema)
            var expired = false
            let found = try key.withUnsafeBytes { key in
                let found = try RecordReader.get(
                    T.self, key: key, id: id, schema: schema, now: now, txn: txn, session: session,
                    expired: &expired)
                // A read in a transaction is a use of the record, as `LocalStorage.fetch(_:id:)` is.
                if found != nil { session.noteUse?(key) }
                return found
            }
            try finish(session, expired: expired ? [key] : [], purge: false, schema: schema)
            return found
        }
    }

    /// The record whose id is `id`, or nil when it is absent or expired.
    @_disfavoredOverload
    public func fetch<T: LocalStorable>(_ type: T.Type, id: T.ID) throws -> T? {
        try fetch(type, id: try StorageKey.string(for: id))
    }

    /// Live records of `T` in `options.sort` order, paged by limit and offset.
    public func fetch<T: LocalStorable>(_ type: T.Type, options: FetchOptions = FetchOptions()) throws -> [T] {
        try run {
            let options = try Self.checked(options)
            let schema = try schema(T.self)
            let session = storage.makeDecodeSession(for: schema)
            let (items, expired) = try RecordReader.list(
                T.self, schema: schema, options: options, now: now,
                txn: txn, session: session)
            try finish(session, expired: expired, purge: options.purgeExpired, schema: schema)
            return items
        }
    }

    /// Records of `T` matching every filter, in `orderedBy` order (or `options.sort` without one).
    public func fetch<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], orderedBy sort: StorageIndexSort? = nil,
        options: FetchOptions = FetchOptions()
    ) throws -> [T] {
        try run {
            let options = try Self.checked(options)
            let schema = try schema(T.self)
            let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
            if QueryRunner.usesIndexes(plan) { try prepareIndexedRead(T.self, schema: schema) }
            let session = storage.makeDecodeSession(for: schema)
            let (items, expired) = try QueryRunner.fetch(
                T.self, plan: plan, options: options, schema: schema,
                now: now, txn: txn, session: session)
            try finish(session, expired: expired, purge: options.purgeExpired, schema: schema)
            return items
        }
    }

    /// The number of live records of `T`.
    public func count<T: LocalStorable>(_ type: T.Type) throws -> Int {
        try run { try RecordReader.count(schema: try schema(T.self), now: now, txn: txn) }
    }

    /// The number of live records of `T` matching every filter. Decodes nothing.
    public func count<T: LocalStorable>(_ type: T.Type, matching filters: [StorageIndexFilter]) throws -> Int {
        try run {
            let schema = try schema(T.self)
            let plan = try QueryPlan(filters: filters, sort: nil, schema: schema)
            try prepareIndexedRead(T.self, schema: schema)
            return try QueryRunner.count(plan: plan, schema: schema, now: now, txn: txn)
        }
    }

    /// One page of the records of `T` matching every filter, with the totals to page on.
    public func page<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
        page: Int, pageSize: Int
    ) throws -> StoragePage<T> {
        try self.page(T.self, matching: filters, orderedBy: sort, page: page, pageSize: pageSize, order: .id)
    }

    /// The body of both `page` methods: `order` is the options' sort, for records no index sort orders.
    private func page<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], orderedBy sort: StorageIndexSort?,
        page: Int, pageSize: Int, order: FetchOptions.Sort
    ) throws -> StoragePage<T> {
        try run {
            try QueryRunner.validate(page: page, pageSize: pageSize)
            let schema = try schema(T.self)
            let plan = try QueryPlan(filters: filters, sort: sort, schema: schema)
            try prepareIndexedRead(T.self, schema: schema)
            let session = storage.makeDecodeSession(for: schema)
            let result = try QueryRunner.page(
                T.self, plan: plan, page: page, pageSize: pageSize, sort: order, schema: schema,
                now: now, txn: txn, session: session)
            try finish(session, expired: [], purge: false, schema: schema)
            return result
        }
    }

    /// The number of live records of `T` matching every filter, as `LocalStorage`'s method with `options`
    /// takes them: nothing of `options` matters but `scope`, and a transaction reads this store's snapshot, so
    /// `.shared` throws `invalidQuery` as it does on a store without a shared tier.
    public func count<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter], options: FetchOptions
    ) throws -> Int {
        _ = try Self.checked(options)
        return try count(T.self, matching: filters)
    }

    /// One page of the records of `T` matching every filter, as `LocalStorage`'s method with `options` takes
    /// them: the page's `limit` and `offset` replace the options', `options.sort` orders what no index sort does,
    /// and `.shared` throws `invalidQuery` (a transaction reads this store's snapshot).
    public func page<T: LocalStorable>(
        _ type: T.Type, matching filters: [StorageIndexFilter] = [], orderedBy sort: StorageIndexSort? = nil,
        page: Int, pageSize: Int, options: FetchOptions
    ) throws -> StoragePage<T> {
        _ = try Self.checked(options)
        return try self.page(
            T.self, matching: filters, orderedBy: sort, page: page, pageSize: pageSize, order: options.sort)
    }

    /// `options` validated, refusing `.shared`: a transaction reads this store's snapshot, and a store with a shared
    /// tier refuses transactions, so the scope is refused as `LocalStorage`'s reads refuse it without one.
    private static func checked(_ options: FetchOptions) throws -> FetchOptions {
        guard options.scope == .local else { throw LocalRecordStore.noSharedTier }
        return try options.validated()
    }

    /// What the store knows about a record, expired or not.
    public func metadata<T: LocalStorable>(_ type: T.Type, id: String) throws -> StorageMetadata? {
        try run {
            try RecordReader.metadata(
                T.self, key: try RecordWriter.key(for: id), id: id, schema: try schema(T.self),
                now: now, txn: txn)
        }
    }

    /// What the store knows about the record whose id is `id`.
    @_disfavoredOverload
    public func metadata<T: LocalStorable>(_ type: T.Type, id: T.ID) throws -> StorageMetadata? {
        try metadata(type, id: try StorageKey.string(for: id))
    }
}

/// Thrown inside a read transaction's body when a type must be registered, migrated or re-indexed
/// before the read can answer exactly: the read does that, then runs the body again.
struct RestartAfterPreparing: Error {}
