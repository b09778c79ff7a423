import CLMDB
import Foundation
import Synchronization

/// Everything one open store directory has in this process: the environment, the writer, the
/// observers and the open databases of each type. Shared by every ``LocalStorage`` on the directory.
final class StoreCore: Sendable {
    let environment: Environment
    let writer: Writer
    let hub: ObserverHub
    let configuration: LocalStorageConfiguration
    let logger: (any StorageLogger)?
    let meta: MDB_dbi
    let directory: URL
    private let schemas = Mutex(SchemaState())
    /// The environment settings the first ``LocalStorage`` on this core asked for (nil while only
    /// maintenance has it open).
    private let pinnedSettings = Mutex<EnvironmentSettings?>(nil)
    /// Payloads decoded so far (tests check that queries decode only the rows they return).
    let decodes = DecodeCounter()
    let liveQueries: LiveQueryCenter
    let sweeper: ExpirySweeper

    init(directory: URL, configuration: LocalStorageConfiguration) throws {
        let durability = configuration.isInMemory ? StorageDurability.none : configuration.durability
        do {
            environment = try Environment(directory: directory.path, mapSize: configuration.mapSize,
                                          maxMapSize: configuration.maxMapSize, durability: durability)
        } catch {
            throw LocalStorageError.openFailed(path: directory.path, reason: StoreCore.explain(error))
        }
        do {
            meta = try environment.write { txn in
                guard let dbi = try txn.openDatabase("meta", flags: 0, create: true) else {
                    throw LMDBError(code: MDB_NOTFOUND, call: "mdb_dbi_open", caller: #function)
                }
                return dbi
            }
        } catch {
            throw LocalStorageError.openFailed(path: directory.path, reason: StoreCore.explain(error))
        }
        self.directory = directory
        self.configuration = configuration
        self.logger = configuration.logger
        let hub = ObserverHub()
        self.hub = hub
        let writer = Writer(environment: environment, hub: hub, logger: configuration.logger)
        self.writer = writer
        liveQueries = LiveQueryCenter(environment: environment, hub: hub, writer: writer,
                                      pollInterval: configuration.externalChangePollInterval)
        sweeper = ExpirySweeper(writer: writer, meta: meta, interval: configuration.expirySweepInterval,
                                logger: configuration.logger)
        logger?.log(level: .info, message: "Opened store", metadata: ["path": directory.path])
        if environment.recreatedUnfinishedDataFile {
            logger?.log(level: .warning,
                        message: "Created the store afresh: its data file was left unfinished by an earlier creation "
                            + "(a full disk?) and held no data", metadata: ["path": directory.path])
        }
    }

    deinit {
        sweeper.stop()
        liveQueries.stop()
        writer.stop()
        environment.close()
        // An in-memory store's files were unlinked once open (see `EnvironmentRegistry`): nothing to remove.
    }

    /// Checks that a ``LocalStorage`` asking for `settings` can share this core: the first one pins them
    /// (taking over the durability when only maintenance had the store open), later ones must agree.
    ///
    /// - Throws: `openFailed` naming the setting that differs.
    func adopt(_ settings: EnvironmentSettings, path: String) throws {
        try pinnedSettings.withLock { pinned in
            if let pinned {
                if let reason = pinned.disagreement(with: settings) {
                    throw LocalStorageError.openFailed(path: path, reason: reason)
                }
                return
            }
            if settings.durability != environment.durability {
                do {
                    try environment.setDurability(settings.durability)
                } catch {
                    throw LocalStorageError.openFailed(path: path, reason: StoreCore.explain(error))
                }
            }
            pinned = settings
        }
    }

    private static func explain(_ error: any Error) -> String {
        guard let error = error as? LMDBError else { return String(describing: error) }
        switch error.code {
        case MDB_INVALID: return "not an LMDB store, or its data file is damaged (\(error.message))"
        case MDB_VERSION_MISMATCH: return "the store was made by an incompatible LMDB version (\(error.message))"
        case EACCES, EROFS: return "permission denied (\(error.message))"
        case ENOSPC, EDQUOT: return "the disk is full (\(error.message))"
        default: return error.description
        }
    }

    // MARK: - Type schemas

    /// The open databases of `T`, registering the type (and re-indexing stale records) on first use.
    func schema<T: LocalStorable>(for type: T.Type) async throws -> TypeSchema {
        let key = ObjectIdentifier(type)
        if let schema = schemas.withLock({ $0.ready[key] }) { return schema }
        let registration = schemas.withLock { state -> Registration in
            if let schema = state.ready[key] { return .ready(schema) }
            if let task = state.pending[key] { return .pending(task) }
            let name = T.storageName
            let declaration = IndexDeclaration.of(T.self)
            let version = T.storageVersion
            let reindexer = Reindexer<T>(logger: logger)
            let meta = self.meta
            if let versioned = T.self as? any LocalStorageVersioned.Type {
                for problem in MigrationValidator.problems(steps: versioned.migrations, current: version) {
                    logger?.log(level: .error, message: "Migration chain of \(name): \(problem)",
                                metadata: ["type": name])
                }
            }
            let writer = self.writer
            let task = Task {
                try await writer.performExclusive { writer in
                    try StoreCore.register(name, declaration: declaration, version: version, meta: meta,
                                           writer: writer, reindexer: reindexer)
                }
            }
            state.pending[key] = task
            return .pending(task)
        }
        switch registration {
        case .ready(let schema):
            return schema
        case .pending(let task):
            do {
                let (schema, migrationPending) = try await task.value
                schemas.withLock { state in
                    state.ready[key] = schema
                    state.pending[key] = nil
                    if migrationPending { state.migrationsPending.insert(schema.name) }
                }
                return schema
            } catch {
                schemas.withLock { $0.pending[key] = nil }
                throw error
            }
        }
    }

    private enum Registration {
        case ready(TypeSchema)
        case pending(Task<(TypeSchema, Bool), Error>)
    }

    private struct SchemaState {
        var ready: [ObjectIdentifier: TypeSchema] = [:]
        var pending: [ObjectIdentifier: Task<(TypeSchema, Bool), Error>] = [:]
        var migrationsPending: Set<String> = []
    }

    /// Whether records of `typeName` may be older than its current version (the type's version moved
    /// since they were written) and have not all been migrated yet.
    func isMigrationPending(_ typeName: String) -> Bool {
        schemas.withLock { $0.migrationsPending.contains(typeName) }
    }

    /// Records that every record of the type is at its current version.
    func markMigrated(schema: TypeSchema) async throws {
        guard schemas.withLock({ $0.migrationsPending.remove(schema.name) }) != nil else { return }
        let meta = self.meta
        let info = TypeInfo(name: schema.name, indexes: schema.declaration.entries, signature: schema.signature,
                            version: schema.version)
        let bytes = Array(try JSONEncoder().encode(info))
        try await writer.perform { context in
            try context.txn.put(meta, key: TypeInfo.key(schema.name), value: bytes)
        }
    }

    /// Validates a type name for storage.
    static func validate(typeName name: String) throws(LocalStorageError) {
        guard !name.isEmpty, name.utf8.count <= 200 else {
            throw .invalidQuery("storageName must have 1 to 200 bytes (got \"\(name)\")")
        }
    }

    /// Opens the databases of a type, records it in `meta`, and re-indexes when its declaration changed.
    private static func register<T: LocalStorable>(
        _ name: String, declaration: IndexDeclaration, version: Int, meta: MDB_dbi, writer: Writer,
        reindexer: Reindexer<T>
    ) throws -> (TypeSchema, Bool) {
        try validate(typeName: name)
        let (schema, previous) = try writer.transact { context -> (TypeSchema, TypeInfo?) in
            let schema = try TypeSchema.open(name, declaration: declaration, version: version, in: context.txn)
            let previous = try context.txn.get(meta, key: TypeInfo.key(name)).flatMap {
                try? JSONDecoder().decode(TypeInfo.self, from: Data($0))
            }
            return (schema, previous)
        }
        if let previous, previous.signature != declaration.signature {
            try reindexer.run(schema: schema, previous: previous, writer: writer)
        }
        // The stored version moves only once every record is migrated (see `markMigrated`).
        let migrationPending = (previous?.version ?? version) < version
        let info = TypeInfo(name: name, indexes: declaration.entries, signature: declaration.signature,
                            version: migrationPending ? previous?.version ?? version : version)
        if info != previous {
            let bytes = Array(try JSONEncoder().encode(info))
            try writer.transact { context in try context.txn.put(meta, key: TypeInfo.key(name), value: bytes) }
        }
        return (schema, migrationPending)
    }

    /// The names of every type this store has records of (from `meta`).
    func storedTypeInfos() throws -> [TypeInfo] {
        try environment.read { txn in try StoreCore.typeInfos(meta: meta, in: txn) }
    }

    static func typeInfos(meta: MDB_dbi, in txn: Transaction) throws -> [TypeInfo] {
        try txn.withCursor(meta) { cursor in
            var infos: [TypeInfo] = []
            var entry = try cursor.seek(atLeast: TypeInfo.keyPrefix)
            while let current = entry, current.key.starts(with: TypeInfo.keyPrefix) {
                if let info = try? JSONDecoder().decode(TypeInfo.self, from: Data(current.value)) {
                    infos.append(info)
                }
                entry = try cursor.move(MDB_NEXT)
            }
            return infos
        }
    }

    /// Opens the databases of a type known only from `meta` (for purges and maintenance).
    static func schema(for info: TypeInfo, in txn: Transaction) throws -> TypeSchema {
        try TypeSchema.open(info.name, declaration: IndexDeclaration(entries: info.indexes),
                            version: info.version, in: txn)
    }
}
