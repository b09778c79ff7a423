import Foundation

/// The open schemas of this process's types, and the registrations under way.
struct SchemaCache: Sendable {
    private(set) var ready: [ObjectIdentifier: TypeSchema] = [:]
    /// The first ready schemas, in the order they became ready, for ``readySchema(for:)``: comparing a few
    /// identifiers is cheaper than hashing one (callgrind: the dictionary's lookup was ~300 instructions of a
    /// ~3,000-instruction memory-tier hit, and every operation looks its type up).
    private var first: [(key: ObjectIdentifier, schema: TypeSchema)] = []
    /// How many schemas ``first`` holds at most.
    private static let firstCapacity = 8
    var pending: [ObjectIdentifier: Task<(TypeSchema, Bool), Error>] = [:]
    var migrationsPending: Set<String> = []
    /// Counts the schemas made ready; `readyAt` holds the count at which each was.
    private(set) var generation = 0
    private var readyAt: [ObjectIdentifier: Int] = [:]

    /// Makes `schema` the ready one of the type `key`, unless another registration made one first; returns the
    /// ready one, which every caller keeps.
    ///
    /// `tracksRecency` is asked here, under the lock ``noteRecency(_:)`` holds, so that limits adopted while the
    /// type registered cannot leave it with the flag read before (review-79).
    @discardableResult
    mutating func install(
        _ schema: TypeSchema, for key: ObjectIdentifier, migrationPending: Bool, tracksRecency: (UInt32) -> Bool
    ) -> TypeSchema {
        if let ready = readySchema(for: key) { return ready }
        var schema = schema
        schema.tracksRecency = tracksRecency(schema.number)
        generation += 1
        ready[key] = schema
        if first.count < Self.firstCapacity { first.append((key, schema)) }
        readyAt[key] = generation
        if migrationPending { migrationsPending.insert(schema.name) }
        return schema
    }

    /// Sets whether each ready type's reads are noted for eviction, after the store's limits changed.
    mutating func noteRecency(_ tracks: (UInt32) -> Bool) {
        for (key, schema) in ready {
            var schema = schema
            schema.tracksRecency = tracks(schema.number)
            ready[key] = schema
        }
        for index in first.indices { first[index].schema.tracksRecency = tracks(first[index].schema.number) }
    }

    /// The ready schema of `key`, if any.
    func readySchema(for key: ObjectIdentifier) -> TypeSchema? {
        // By index: iterating the elements copied each one, a retain and a release per schema passed.
        for index in first.indices where first[index].key == key { return first[index].schema }
        return first.count < Self.firstCapacity ? nil : ready[key]
    }

    /// The ready schema of `key`, if it was ready when ``generation`` was `generation`.
    func schema(for key: ObjectIdentifier, readyBy generation: Int) -> TypeSchema? {
        guard let readyAt = readyAt[key], readyAt <= generation else { return nil }
        return readySchema(for: key)
    }
}

extension StoreCore {
    // MARK: - Type schemas

    /// The open databases of `T`, registering the type on first use.
    ///
    /// - Throws: `invalidDeclaration` when `T`'s names or indexes cannot be stored; `decodingFailed` when
    ///   the store's description of the type cannot be read (damaged, or written by a newer version).
    ///
    /// Inlined, so that a type already open costs its callers a lookup and no async call of its own.
    @inline(__always)
    nonisolated(nonsending) func schema<T: LocalStorable>(for type: T.Type) async throws -> TypeSchema {
        if let schema = cachedSchema(for: type) { return schema }
        return try await register(T.self)
    }

    /// Registers `T` on its first use in this process (or waits for the registration under way).
    private nonisolated(nonsending) func register<T: LocalStorable>(_ type: T.Type) async throws -> TypeSchema {
        let key = ObjectIdentifier(type)
        let name = T.storageName
        let (declaration, indexValues) = IndexDeclaration.read(T.self)
        try declaration.validate(storageName: name, type: "\(T.self)")
        if let problem = T.storageLimits?.problem {
            throw LocalStorageError.invalidDeclaration("the storageLimits of \(T.self): \(problem)")
        }
        if let schema = registeredInPlace(T.self, name: name, reading: (declaration, indexValues)) { return schema }
        let registration = schemas.withLock { state -> Registration in
            if let schema = state.readySchema(for: key) { return .ready(schema) }
            if let task = state.pending[key] { return .pending(task) }
            let version = T.storageVersion
            let meta = self.meta
            logMigrationProblems(T.self, name: name)
            let writer = self.writer
            let mayRaiseLayout = self.mayRaiseLayout
            let keepsUpdateOrder = evictionWalksUpdateOrder(of: T.self)
            // The schema computes index values with this caller's reading, whose declaration it registers; the
            // callers waiting on the registration read the declaration at other moments (review-75 #2).
            let task = Task {
                let registered = try await writer.performExclusive { writer in
                    try writer.transact { context in
                        let registered = try StoreCore.register(
                            name, declaration: declaration, version: version, meta: meta,
                            txn: context.txn, mayRaiseLayout: mayRaiseLayout)
                        if keepsUpdateOrder { try UpdateOrder.keep(registered.0, context: context) }
                        return registered
                    }
                }
                registered.0.runtime.use(indexValues, for: T.self)
                return registered
            }
            state.pending[key] = task
            return .pending(task)
        }
        switch registration {
        case .ready(let schema):
            return schema
        case .pending(let task):
            do {
                let (registered, migrationPending) = try await task.value
                let schema = limited(registered, T.self)
                return schemas.withLock { state in
                    state.pending[key] = nil
                    // A registration in place meanwhile (``registeredInPlace``) keeps its schema.
                    return state.install(
                        schema, for: key, migrationPending: migrationPending, tracksRecency: limits.tracksRecency)
                }
            } catch {
                schemas.withLock { $0.pending[key] = nil }
                throw error
            }
        }
    }

    /// `T`'s schema when `meta` already describes the type with this declaration and version, its databases
    /// opened in a read transaction on the caller's thread: no write and no hop to the writer thread, the
    /// common case at the first use of a type after an open. Nil when registering would write to `meta` (a
    /// new type, index or declaration), when a write transaction or another registration in place is under way
    /// (either may be opening handles), or when anything in this path fails: the writer then registers the
    /// type as before, and reports any error.
    /// `reading` is the declaration and its index values' function from one reading (``IndexDeclaration/read(_:)``,
    /// the default).
    func registeredInPlace<T: LocalStorable>(
        _ type: T.Type, name: String,
        reading: (declaration: IndexDeclaration, computer: IndexValueFunction<T>)? = nil
    ) -> TypeSchema? {
        let (declaration, indexValues) = reading ?? IndexDeclaration.read(T.self)
        let version = T.storageVersion
        let meta = self.meta
        let opened: (TypeSchema, Bool)?
        do {
            opened = try environment.readOpeningHandles { txn -> (TypeSchema, Bool)? in
                guard let info = try TypeRegistry.info(named: name, meta: meta, txn: txn),
                    TypeRegistry.registering(declaration, in: info) == info
                else { return nil }
                let schema = try TypeSchema.open(
                    info, declaration: declaration, version: version, in: txn, create: false)
                return (schema, info.version < version)
            }
        } catch {
            return nil
        }
        guard let (registered, migrationPending) = opened else { return nil }
        let schema = limited(registered, T.self, indexValues: indexValues)
        let key = ObjectIdentifier(type)
        return schemas.withLock { state in
            if state.readySchema(for: key) == nil { logMigrationProblems(T.self, name: name) }
            return state.install(
                schema, for: key, migrationPending: migrationPending, tracksRecency: limits.tracksRecency)
        }
    }

    /// Logs what is wrong with `T`'s chain of migrations, once per registration.
    private func logMigrationProblems<T: LocalStorable>(_ type: T.Type, name: String) {
        guard let versioned = T.self as? any LocalStorageVersioned.Type else { return }
        for problem in MigrationValidator.problems(steps: versioned.migrations, current: T.storageVersion) {
            logger?.log(level: .error, message: "Migration chain of \(name): \(problem)", metadata: ["type": name])
        }
    }

    /// `T`'s open databases if this process has registered it, else nil.
    func cachedSchema<T: LocalStorable>(for type: T.Type) -> TypeSchema? {
        schemas.withLock { $0.readySchema(for: ObjectIdentifier(type)) }
    }

    /// How many schemas this process has made ready so far: a transaction that notes it before it begins
    /// can use exactly the schemas ready by then (``cachedSchema(for:readyBy:)``).
    var schemaGeneration: Int { schemas.withLock { $0.generation } }

    /// `T`'s open databases if they were ready at `generation` (``schemaGeneration``), else nil. A read
    /// transaction that began before a type's databases were opened does not know their handles (LMDB
    /// answers `EINVAL`): it must start again.
    func cachedSchema<T: LocalStorable>(for type: T.Type, readyBy generation: Int) -> TypeSchema? {
        schemas.withLock { $0.schema(for: ObjectIdentifier(type), readyBy: generation) }
    }

    /// `T`'s schema inside a write transaction: the cached one, or registered in `context`'s own
    /// transaction, and cached once that commits.
    func schema<T: LocalStorable>(for type: T.Type, in context: CommitQueue.Context) throws -> TypeSchema {
        let key = ObjectIdentifier(type)
        if let schema = cachedSchema(for: type) { return schema }
        let name = T.storageName
        let (declaration, indexValues) = IndexDeclaration.read(T.self)
        try declaration.validate(storageName: name, type: "\(T.self)")
        if let problem = T.storageLimits?.problem {
            throw LocalStorageError.invalidDeclaration("the storageLimits of \(T.self): \(problem)")
        }
        let (registered, migrationPending) = try StoreCore.register(
            name, declaration: declaration,
            version: T.storageVersion, meta: meta,
            txn: context.txn, mayRaiseLayout: mayRaiseLayout)
        if evictionWalksUpdateOrder(of: T.self) { try UpdateOrder.keep(registered, context: context) }
        let schema = limited(registered, T.self, indexValues: indexValues)
        // Known at once, so that an indexed read in this same transaction migrates first (should the
        // transaction abort, a pass that finds nothing to do only ends it).
        if migrationPending { _ = schemas.withLock { $0.migrationsPending.insert(schema.name) } }
        context.onCommit { [weak self] in
            guard let self else { return }
            let limits = self.limits
            _ = self.schemas.withLock { state in
                state.install(
                    schema, for: key, migrationPending: migrationPending, tracksRecency: limits.tracksRecency)
            }
        }
        return schema
    }

    /// `schema` with `T`'s own limits, which the writer learns here, computing index values with `indexValues`
    /// when given (made from the reading of the declaration `schema` was registered with).
    private func limited<T: LocalStorable>(
        _ schema: TypeSchema, _ type: T.Type, indexValues: IndexValueFunction<T>? = nil
    ) -> TypeSchema {
        if let indexValues { schema.runtime.use(indexValues, for: T.self) }
        var schema = schema
        schema.limits = T.storageLimits
        limits.register(type: schema.number, name: schema.name, limits: T.storageLimits)
        schema.tracksRecency = limits.tracksRecency(ofType: schema.number)
        schema.sealing = sealing
        schema.writesCompactHeaders = writesCompactHeaders
        return schema
    }

    private enum Registration {
        case ready(TypeSchema)
        case pending(Task<(TypeSchema, Bool), Error>)
    }

    /// Records the type's declaration in `meta` and opens its databases, in one write transaction.
    ///
    /// Nothing is re-indexed here: records indexed with another declaration are brought up to date by the
    /// first indexed query (see ``Reindexer``), because another declaration of the same stored type (an
    /// app and its extension) may go on writing them.
    private static func register(
        _ name: String, declaration: IndexDeclaration, version: Int, meta: Database,
        txn: Transaction, mayRaiseLayout: () -> Bool
    ) throws -> (TypeSchema, Bool) {
        let (info, _) = try TypeRegistry.register(
            name, declaration: declaration, version: version, meta: meta,
            txn: txn, mayRaiseLayout: mayRaiseLayout)
        let schema = try TypeSchema.open(info, declaration: declaration, version: version, in: txn, create: true)
        // The stored version moves only once every record is migrated (see `markMigrated`).
        return (schema, info.version < version)
    }

    /// Whether records of `typeName` may be older than its current version (the type's version moved
    /// since they were written) and have not all been migrated yet.
    func isMigrationPending(_ typeName: String) -> Bool {
        schemas.withLock { $0.migrationsPending.contains(typeName) }
    }

    /// Ends this process's pass over the type's old records without moving its stored version: some were left
    /// behind (their chain failed), and the next launch tries them again.
    func endMigrationPass(of schema: TypeSchema) {
        _ = schemas.withLock { $0.migrationsPending.remove(schema.name) }
    }

    /// The end of a pass in `context`'s transaction: the stored version moves in it when no record was left
    /// behind, and this process stops running the pass when it commits.
    func markMigrated(schema: TypeSchema, leftBehind: Int, in context: CommitQueue.Context) throws {
        if leftBehind == 0, var info = try TypeRegistry.info(named: schema.name, meta: meta, txn: context.txn),
            info.version < schema.version
        {
            info.version = schema.version
            try TypeRegistry.put(info, meta: meta, txn: context.txn)
        }
        context.onCommit { [weak self] in self?.endMigrationPass(of: schema) }
    }

    /// Records that every record of the type is at its current version.
    func markMigrated(schema: TypeSchema) async throws {
        guard schemas.withLock({ $0.migrationsPending.remove(schema.name) }) != nil else { return }
        let meta = self.meta
        try await writer.perform { context in
            guard var info = try TypeRegistry.info(named: schema.name, meta: meta, txn: context.txn),
                info.version < schema.version
            else { return }
            info.version = schema.version
            try TypeRegistry.put(info, meta: meta, txn: context.txn)
        }
    }

    /// The descriptions of every type this store has records of (from `meta`).
    func storedTypeInfos() throws -> [TypeInfo] {
        try environment.read { txn in try StoreCore.typeInfos(meta: meta, in: txn) }
    }

    /// The readable type descriptions in `meta`; unreadable ones are left out (and never written).
    static func typeInfos(meta: Database, in txn: Transaction) throws -> [TypeInfo] {
        try TypeRegistry.all(meta: meta, txn: txn).infos
    }

    /// Opens the databases of a type known only from `meta` (for purges and maintenance), with the
    /// declaration registered last; in a read-only transaction nothing is created.
    static func schema(for info: TypeInfo, in txn: Transaction) throws -> TypeSchema {
        try TypeSchema.open(info, in: txn)
    }
}

extension StoreCore {
    /// Whether this process's evictions of `T` walk its update order (``UpdateOrder``): under a limit (its own or the
    /// store's) with the `.leastRecentlyUpdated` or `.soonestExpiring` policy, whose victims come from it. Such a type
    /// gets its order when it registers, in a commit of its own, rather than in the commit of the first save that
    /// evicts (which the build could push past a full map).
    func evictionWalksUpdateOrder<T: LocalStorable>(of type: T.Type) -> Bool {
        guard T.storageLimits != nil || configuration.limits != nil else { return false }
        return configuration.evictionPolicy == .leastRecentlyUpdated || configuration.evictionPolicy == .soonestExpiring
    }

    /// Whether registering a new type may raise a store of layout 5 to 6 (``UpdateOrder``), asked inside the
    /// registration's write transaction: an app's store may while no other process has it open (one of an older
    /// version that has it open would go on writing it as layout 5); the maintenance tool's (which keeps a store's
    /// layout, or upgrades it to the count tree's at most) may not.
    var mayRaiseLayout: @Sendable () -> Bool {
        let allowed =
            !configuration.keepsLayout
            && (configuration.upgradesLayoutAtMostTo ?? TypeRegistry.layout) >= TypeRegistry.updateOrderOnDemandLayout
        let environment = self.environment
        return { allowed && !environment.othersHaveItOpen() }
    }
}
