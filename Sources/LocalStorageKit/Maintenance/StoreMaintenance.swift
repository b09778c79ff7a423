import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Offline maintenance of one store directory: statistics, listings, verification, repair, compaction,
/// export and import. The `localstorage` command-line tool is a thin shell around it.
///
/// It knows the stored types and their indexes only from the store's own `meta` database, never from
/// app code. It is safe to use while an app in another process has the same store open: LMDB lets
/// readers and one writer share a store across processes, and every write goes through the store's
/// writer in bounded transactions.
///
/// ```swift
/// let maintenance = try await StoreMaintenance(directory: storeURL)
/// let report = try maintenance.verify()
/// print(report.problems.isEmpty ? "clean" : "\(report.problems.count) problems")
/// ```
///
/// In a process that already has a ``LocalStorage`` on the same directory it shares that store's
/// environment and writer (LMDB forbids opening one environment twice in a process).
@_spi(Maintenance) public final class StoreMaintenance: Sendable {
    /// The directory that holds the store's `data.mdb`.
    public let directory: URL
    /// Whether the store was opened read-only, because this process cannot write its files: reading
    /// commands work, writing ones throw ``MaintenanceError/readOnly(path:)``.
    public var isReadOnly: Bool { core == nil }

    /// Whether the store has a key check value (it holds sealed payloads only). An open with
    /// `movesKeyCheck: false` and a key leaves a store without one as it is; such a store takes a key only at an
    /// open that moves the check.
    public var hasKeyCheck: Bool { sealing.holdsOnlySealed }
    /// The store's environment.
    let environment: Environment
    /// The store's `meta` database.
    let meta: Database
    /// The store with its writer; nil when the store is read-only.
    let core: StoreCore?
    /// The store's clock (the system's when the store is read-only).
    var clock: any StorageClock { core?.clock ?? SystemClock() }
    /// Opens sealed and compressed payloads, and seals what imports write.
    let sealing: PayloadSealing
    /// The keys the store was opened with, for the stores maintenance makes from it (a compacted copy).
    let encryption: StorageEncryption?
    private let catalog = Mutex(Catalog())

    /// One stored type as `meta` declares it, with its open databases.
    struct StoredType: Sendable {
        let info: TypeInfo
        let schema: TypeSchema
    }

    /// Everything `meta` says, read once per open (and again after an import adds types).
    struct Catalog: Sendable {
        /// The readable types by name, compared by bytes (``ExactName``).
        var types: [ExactName: StoredType] = [:]
        /// The names of `meta` entries that are not valid type descriptions.
        var unreadable: [String] = []
        /// Those of them that are well-formed JSON: most likely written by a newer version (an index kind this
        /// version does not know), not damaged.
        var newer: [String] = []

        /// The readable types in name order.
        var sortedTypes: [StoredType] { types.values.sorted { ExactName($0.info.name) < ExactName($1.info.name) } }
    }

    /// The directory an app's store lives in when it keeps the default configuration.
    public static var defaultDirectory: URL { LocalStorageConfiguration().storeDirectory }

    /// The store directory `directory` names: `directory` itself when it holds `data.mdb`, else the store
    /// directory a configuration derives from it as its `databaseDirectory` when that holds `data.mdb`,
    /// else `directory` (where a new store would go). A store's own `data.mdb` or `lock.mdb` names its folder.
    public static func storeDirectory(named directory: URL) -> URL {
        let manager = FileManager.default
        if ["data.mdb", "lock.mdb"].contains(directory.lastPathComponent), isFile(directory.path) {
            return directory.deletingLastPathComponent()
        }
        if manager.fileExists(atPath: directory.appendingPathComponent("data.mdb").path) { return directory }
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = directory
        let derived = configuration.storeDirectory
        if manager.fileExists(atPath: derived.appendingPathComponent("data.mdb").path) { return derived }
        return directory
    }

    /// Whether `path` is there and is not a directory (a store path given as a file's).
    static func isFile(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
    }

    /// Whether the store directory `directory` holds a data file of no bytes: no store yet (LMDB would make one
    /// in it), which only an import creates.
    static func holdsEmptyDataFile(_ directory: URL) -> Bool {
        var info = stat()
        return stat(directory.appendingPathComponent("data.mdb").path, &info) == 0 && info.st_size == 0
    }

    /// Opens the store in `directory` for maintenance.
    ///
    /// A store this process cannot write is opened read-only (see ``isReadOnly``).
    ///
    /// - Parameters:
    ///   - directory: The directory that holds `data.mdb`, or a configuration's `databaseDirectory` whose
    ///     store directory (see ``storeDirectory(named:)``) holds it.
    ///   - creatingIfMissing: Creates an empty store when there is none (for imports); otherwise a
    ///     missing store is an error, so that a mistyped path never leaves an empty store behind.
    ///   - encryption: The store's key (and previous keys), for a store opened with
    ///     ``LocalStorageConfiguration/encryption``; an encrypted store opened without it throws `openFailed`.
    ///   - movesKeyCheck: Whether the open moves the store's key check value (and its dictionaries) to
    ///     `encryption`'s current key when a previous key sealed them, as an app's open does (what `rekey` and
    ///     `import` need). The CLI's other commands pass false, so that checking a store with a new key and
    ///     the old one never locks out an app that has only the old one yet.
    ///   - sealingPlainStore: Whether `encryption` may be given to a store whose records were written without
    ///     encryption, for ``rekey(progress:)`` to seal them (it writes the key check value when it is done).
    ///     Otherwise such an open throws `openFailed`: an encrypted store holds sealed payloads only.
    ///   - upgradesLayout: Whether the open upgrades a store of layout 2 to the count tree's layout 3, as an app's open
    ///     does. Commands that only read pass false: the upgrade would lock the older version that wrote the store
    ///     out of it for good. Maintenance never moves a store to layout 4 (compact headers), which it does not
    ///     write: only an app's open does.
    /// - Throws: ``MaintenanceError/noStore(path:)``, or ``LocalStorageError/openFailed(path:reason:)``.
    public init(
        directory: URL, creatingIfMissing: Bool = false, encryption: StorageEncryption? = nil,
        movesKeyCheck: Bool = true, sealingPlainStore: Bool = false, upgradesLayout: Bool = true
    ) async throws {
        let directory = StoreMaintenance.storeDirectory(named: directory)
        let dataFile = directory.appendingPathComponent("data.mdb")
        if !creatingIfMissing && StoreMaintenance.holdsEmptyDataFile(directory) {
            throw MaintenanceError.noStore(path: directory.path)
        }
        if !FileManager.default.fileExists(atPath: dataFile.path) {
            guard creatingIfMissing else { throw MaintenanceError.noStore(path: directory.path) }
            let folderMode = StoreFileModes.folderMode(for: LocalStorageConfiguration().filePermissions)
            if let problem = StoreFileModes.makeFolder(directory.path, mode: folderMode) {
                throw LocalStorageError.openFailed(path: directory.path, reason: problem)
            }
        }
        self.directory = directory
        self.encryption = encryption
        if let lock = StoreMaintenance.readOnlyLock(directory) {
            // A store this process cannot write: open it read-only, outside the registry (no writer).
            do {
                let defaults = LocalStorageConfiguration()
                environment = try Environment(
                    directory: directory.path, mapSize: defaults.mapSize,
                    maxMapSize: defaults.maxMapSize, durability: .none, readOnly: true,
                    withoutLock: lock == .unusable)
                let environment = self.environment
                (meta, sealing) = try environment.readCommitted { txn in
                    guard let dbi = try txn.openDatabase("meta", create: false) else {
                        throw LMDBError.notFound("mdb_dbi_open")
                    }
                    let sealing = try PayloadSealing.open(
                        encryption: encryption, compression: .none, meta: dbi, txn: txn, path: directory.path,
                        readOnly: true, holdsRecords: { try TypeRegistry.holdsRecords(txn: txn) },
                        storedDictionary: { id in try PayloadDictionaries.stored(id, meta: dbi, in: environment) })
                    return (dbi, sealing)
                }
            } catch let error as LocalStorageError {
                throw error
            } catch let error as LMDBError where error.isNotFound {
                throw LocalStorageError.openFailed(
                    path: directory.path, reason: "not a LocalStorageKit store (it has no meta database)")
            } catch {
                throw LocalStorageError.openFailed(path: directory.path, reason: "read-only: \(error)")
            }
            core = nil
        } else {
            var configuration = LocalStorageConfiguration()
            configuration.expirySweepInterval = nil
            configuration.encryption = encryption
            configuration.keepsKeyCheck = !movesKeyCheck
            configuration.sealsPlainStore = sealingPlainStore
            configuration.keepsLayout = !upgradesLayout
            configuration.requiresExistingStore = !creatingIfMissing
            configuration.upgradesLayoutAtMostTo = TypeRegistry.countTreeLayout
            let core = try EnvironmentRegistry.core(directory: directory, configuration: configuration)
            // An app of this process has the store open: its keys are the ones in use. Maintenance given other
            // keys (a rekey to a new key, a check with a wrong one) must not act as if its own applied.
            if encryption != nil, let reason = core.sealingDisagreement(with: encryption) {
                throw LocalStorageError.openFailed(path: directory.path, reason: reason + "; close it first")
            }
            self.core = core
            environment = core.environment
            meta = core.meta
            sealing = core.sealing
        }
        try await reloadCatalog()
    }

    /// How a read-only store's lock file can be used.
    enum ReadOnlyLock {
        /// `lock.mdb` is writable: readers register as usual.
        case usable
        /// `lock.mdb` is missing (and cannot be made) or cannot be written: read without it.
        case unusable
    }

    /// Nil when this process can write the store in `directory`; otherwise how its lock file can be used.
    ///
    /// `access(2)` answers for the real user, as the kernel would for a write: root may write a store
    /// without write permission bits, but not one on a read-only file system.
    static func readOnlyLock(_ directory: URL) -> ReadOnlyLock? {
        let data = directory.appendingPathComponent("data.mdb").path
        let lock = directory.appendingPathComponent("lock.mdb").path
        let lockExists = FileManager.default.fileExists(atPath: lock)
        let lockWritable = lockExists ? access(lock, W_OK) == 0 : access(directory.path, W_OK) == 0
        guard FileManager.default.fileExists(atPath: data), access(data, W_OK) != 0 || !lockWritable else {
            return nil
        }
        return lockWritable ? .usable : .unusable
    }

    // MARK: - Types

    /// Every type the store's `meta` database describes, in name order.
    public func types() -> [TypeDescription] {
        catalog.withLock { $0.sortedTypes.map { TypeDescription($0.info, withOtherDeclarations: true) } }
    }

    /// Names of `meta` entries that could not be read as type descriptions.
    public var unreadableTypeNames: [String] { catalog.withLock { $0.unreadable } }

    /// Those of ``unreadableTypeNames`` whose description is well-formed JSON: most likely written by a newer
    /// version of LocalStorageKit, whose records a salvage must not drop.
    public var newerTypeNames: [String] { catalog.withLock { $0.newer } }

    /// Reads `meta` again and opens the databases of every type it names.
    func reloadCatalog() async throws {
        let meta = self.meta
        let sealing = self.sealing
        let loaded: Catalog
        if let core {
            // Read in place, so that a command that only reads does not wait for another process's write
            // transaction; on the writer when another transaction of this process is opening handles, or when a
            // type's databases are missing (the writer creates them) or the read fails (the writer reports it).
            let read: Catalog?
            do {
                read = try environment.readOpeningHandles { txn in
                    try StoreMaintenance.loadCatalog(meta: meta, txn: txn, sealing: sealing)
                }
            } catch {
                read = nil
            }
            if let read {
                loaded = read
            } else {
                loaded = try await core.writer.performExclusive { writer in
                    try writer.transact { context in
                        try StoreMaintenance.loadCatalog(meta: meta, txn: context.txn, sealing: sealing)
                    }
                }
            }
        } else {
            // A committed read transaction keeps the database handles it opened.
            loaded = try StoreMaintenance.mappingErrors {
                try environment.readCommitted { txn in
                    try StoreMaintenance.loadCatalog(meta: meta, txn: txn, sealing: sealing)
                }
            }
        }
        catalog.withLock { $0 = loaded }
    }

    /// The current catalog.
    var currentCatalog: Catalog { catalog.withLock { $0 } }

    /// The type called `name`: the one spelled with these very bytes, else the only one whose name Swift
    /// compares equal to it (a name typed in another Unicode normalization form).
    ///
    /// - Throws: ``MaintenanceError/unknownType(_:known:)``; `decodingFailed` for a type whose description
    ///   in `meta` cannot be read (it is there, so it is not unknown).
    func storedType(_ name: String) throws -> StoredType {
        let current = currentCatalog
        if let type = current.types[ExactName(name)] { return type }
        let equivalent = current.types.values.filter { $0.info.name == name }
        if equivalent.isEmpty, let unreadable = current.unreadable.first(where: { $0 == name }) {
            throw LocalStorageError.decodingFailed(
                reason: "the store's description of type \"\(unreadable)\" cannot be read: it is damaged or was "
                    + "written by a newer version of LocalStorageKit (`localstorage verify` reports it)")
        }
        guard equivalent.count == 1, let type = equivalent.first else {
            throw MaintenanceError.unknownType(name, known: current.sortedTypes.map(\.info.name))
        }
        return type
    }

    /// Reads every type description in `meta` and opens each type's databases.
    private static func loadCatalog(meta: Database, txn: Transaction, sealing: PayloadSealing) throws -> Catalog {
        var catalog = Catalog()
        let (infos, unreadable) = try TypeRegistry.all(meta: meta, txn: txn)
        catalog.unreadable = unreadable.map(\.name)
        catalog.newer = try unreadable.map(\.name).filter { name in
            guard let stored = try txn.get(meta, key: TypeInfo.key(name)) else { return false }
            do {
                return try JSONSerialization.jsonObject(with: Data(stored)) is [String: Any]
            } catch {
                return false  // not JSON: damaged
            }
        }
        for info in infos {
            var schema = try StoreCore.schema(for: info, in: txn)
            schema.sealing = sealing
            catalog.types[ExactName(info.name)] = StoredType(info: info, schema: schema)
        }
        return catalog
    }

    // MARK: - Plumbing

    /// Checks every page of the databases of `types` in `txn`'s snapshot (``Environment/checkPages(of:in:)``):
    /// and of the store-wide databases (`meta`, `changes`, `counts`, `leases`, the policies'): what a command
    /// runs before it reads, writes or drops them through LMDB, which trusts its pages. With `recordsOnly`,
    /// only the types' records databases (what `export` and `get` read).
    ///
    /// - Throws: `decodingFailed` naming the damage, rather than a crash inside LMDB.
    func checkPages(of types: [StoredType], recordsOnly: Bool = false, in txn: Transaction) throws {
        let names = Set(
            recordsOnly
                ? types.map { "r.\($0.info.number)" }
                : types.flatMap { TypeSchema.databaseNames(of: $0.info) } + TypeRegistry.storeWideNames)
        do {
            try environment.checkPages(of: { names.contains($0) }, in: txn)
        } catch let damage as DamagedDataFile {
            throw LocalStorageError.decodingFailed(reason: "\(damage)")
        }
    }

    /// Checks every page of the databases of `types` in a snapshot of its own, before a write reads them.
    func checkPages(of types: [StoredType]) throws {
        try read { txn in try checkPages(of: types, in: txn) }
    }

    /// Runs `body` in one read transaction (one consistent snapshot of the store).
    func read<R>(_ body: (Transaction) throws -> R) throws -> R {
        try StoreMaintenance.mappingErrors { try environment.read(body) }
    }

    /// Runs `body` alone on the store's writer thread; it commits with `CommitQueue.transact`.
    ///
    /// - Throws: ``MaintenanceError/readOnly(path:)`` on a read-only store.
    func write<R: Sendable>(_ body: @escaping (CommitQueue) throws -> R) async throws -> R {
        guard let core else { throw MaintenanceError.readOnly(path: directory.path) }
        do {
            return try await core.writer.performExclusive(body)
        } catch {
            throw StoreMaintenance.publicError(error)
        }
    }

    /// Runs `body`, turning internal errors into ``LocalStorageError``.
    static func mappingErrors<R>(_ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch {
            throw publicError(error)
        }
    }

    /// ``MaintenanceError`` as it is, everything else as ``LocalStorageError``.
    static func publicError(_ error: any Error) -> any Error {
        error is MaintenanceError ? error : LocalStorageError.wrapping(error)
    }

    /// The id a record key spells.
    static func id(of key: UnsafeRawBufferPointer) -> String { String(decoding: key, as: UTF8.self) }
}
