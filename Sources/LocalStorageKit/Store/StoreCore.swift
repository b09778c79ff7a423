import Foundation
import Synchronization

/// Everything one open store directory has in this process: the environment, the writer, the
/// observers and the open databases of each type. Shared by every ``LocalStorage`` on the directory.
final class StoreCore: Sendable {
    let environment: Environment
    let writer: CommitQueue
    /// The store's limits and the types' own, for the writer's evictions.
    let limits: LimitBook
    /// Reads noted for least-recently-used eviction, folded by the writer.
    let accessNotes = AccessNotes()
    /// The write-backs and purges reads handed the writer, which `metadata` waits for.
    let readLeftovers = ReadLeftovers()
    /// Evictions since the store opened in this process.
    let evictions = EvictionTally()
    let hub: ObserverHub
    let configuration: LocalStorageConfiguration
    /// The clock every time this store reads or waits on comes from (``LocalStorageConfiguration/clock``).
    let clock: any StorageClock
    let logger: (any StorageLogger)?
    let meta: Database
    /// Seals and compresses payloads as the configuration asks, and opens them (``PayloadSealing``).
    let sealing: PayloadSealing
    /// The change log every commit appends to (see ``ChangeLog``).
    let changeLog: ChangeLog
    /// Whether new records get the compact header (a store of layout 4 or later; see ``RecordLayout``).
    let writesCompactHeaders: Bool
    let directory: URL
    let schemas = Mutex(SchemaCache())
    /// The environment settings the first ``LocalStorage`` on this core asked for (nil while only
    /// maintenance has it open).
    private let pinnedSettings = Mutex<EnvironmentSettings?>(nil)
    /// Payloads decoded so far (tests check that queries decode only the rows they return).
    let decodes = DecodeCounter()
    /// Tests only: awaited by an indexed read after each re-index on the writer, before it reads again (another
    /// declaration's write lands there).
    let afterReindex = Mutex<(@Sendable () async throws -> Void)?>(nil)
    let liveQueries: LiveQueryCenter
    let sweeper: ExpirySweeper
    /// The open databases of every stored type by number, for ``LocalStorage/statistics()`` (filled as
    /// types appear; see StoreCore+Statistics.swift).
    let statisticsSchemas = Mutex<[UInt32: TypeSchema]>([:])
    /// Loads through the cache under way in this process, one per id (see LoadFlights.swift).
    let loads = LoadFlights()
    /// Loads whose result was not stored because their lease no longer held (a write won, or the load was given
    /// up after its timeout); tests and diagnostics.
    let unstoredLoads = Atomic<Int>(0)
    /// How many times a load through the cache found another process's lease, or another instance's on the
    /// shared tier, and waited on it (tests wait for it before they void that lease).
    let leaseWaits = Atomic<Int>(0)
    /// Signalled once this core has let go of the store's files (``EnvironmentRegistry`` waits for it
    /// before opening the directory again).
    let teardown = TeardownSignal()

    /// What is wrong with `configuration`'s limits, file modes or key, which no store can use (nil when nothing
    /// is): checked before anything is created, by ``LocalStorage``'s open (which names an in-memory store
    /// "(in memory)" rather than the folder the library makes for it), the maintenance open and here.
    static func openProblem(_ configuration: LocalStorageConfiguration) -> String? {
        if let problem = configuration.limits?.problem { return "limits: \(problem)" }
        if let problem = StoreFileModes.problem(with: configuration.filePermissions) { return problem }
        return configuration.encryption?.problem
    }

    /// Opens the store in `directory`. `settings` (a ``LocalStorage``'s, nil for maintenance) are recorded for
    /// the processes that open the store after this one, or checked against those of the process that opened
    /// it first and has it open still.
    ///
    /// - Throws: `openFailed`, also naming a setting that differs from another process's.
    init(directory: URL, configuration: LocalStorageConfiguration, settings: EnvironmentSettings? = nil) throws {
        let durability = configuration.isInMemory ? StorageDurability.none : configuration.durability
        if let problem = StoreCore.openProblem(configuration) {
            throw LocalStorageError.openFailed(path: directory.path, reason: problem)
        }
        // `maxMapSize` is the limit even below `mapSize` (which defaults to 64 MiB): the map starts at the smaller.
        let initialMapSize = min(configuration.mapSize, configuration.maxMapSize)
        let opening = Environment.openingMapSize(
            mapSize: initialMapSize, maxMapSize: configuration.maxMapSize,
            growsFromMapSize: configuration.growsMapFromMapSize)
        let open = { (mapSize: Int) throws -> Environment in
            try Environment(
                directory: directory.path, mapSize: mapSize, maxMapSize: configuration.maxMapSize,
                durability: durability, fileMode: StoreFileModes.fileMode(for: configuration.filePermissions),
                compaction: StoreCore.compactionRequest(configuration, directory), settingsRecord: settings?.record)
        }
        do {
            do {
                environment = try open(opening)
            } catch let error as LMDBError where error.code == ENOMEM && opening != initialMapSize {
                // The address space the probe found was taken before LMDB mapped it: the map grows from mapSize.
                environment = try open(initialMapSize)
            }
        } catch {
            throw LocalStorageError.openFailed(path: directory.path, reason: StoreCore.explain(error))
        }
        if let settings, let recorded = environment.recordedByOthers,
            let reason = settings.disagreement(withRecord: recorded)
        {
            throw LocalStorageError.openFailed(path: directory.path, reason: reason)
        }
        do {
            let opened = try StoreCore.openState(environment, configuration: configuration, path: directory.path)
            (meta, changeLog, sealing, writesCompactHeaders) = (
                opened.meta, opened.changeLog, opened.sealing, opened.writesCompactHeaders
            )
        } catch {
            // Another program's environment is left as it was found: without the lock file this open made.
            if TypeRegistry.isForeignStoreRefusal(error) { environment.removeCreatedOpenLockFile() }
            if let error = error as? LocalStorageError, case .openFailed = error { throw error }
            throw LocalStorageError.openFailed(path: directory.path, reason: StoreCore.explain(error))
        }
        self.directory = directory
        self.configuration = configuration
        self.clock = configuration.clock
        self.logger = configuration.logger
        let hub = ObserverHub()
        self.hub = hub
        let limits = LimitBook(store: configuration.limits, policy: configuration.evictionPolicy)
        self.limits = limits
        let evictor = Evictor(book: limits, notes: accessNotes, evictions: evictions, logger: configuration.logger)
        let liveQueries = LiveQueryCenter(
            environment: environment, hub: hub, changeLog: changeLog,
            meta: meta, pollInterval: configuration.externalChangePollInterval, clock: configuration.clock)
        self.liveQueries = liveQueries
        // The writer reports its commits to the center, which delivers other processes' earlier ones first.
        let writer = CommitQueue(
            environment: environment, hub: liveQueries, logger: configuration.logger, changeLog: changeLog,
            evictor: evictor, clock: configuration.clock, reclaimsAfterLargeCommits: !configuration.keepsLayout)
        self.writer = writer
        // Enough reads are pending: an empty commit folds them (the store counts a reading process's uses).
        accessNotes.whenFull { [weak writer] in writer?.foldNotedReads() }
        sweeper = ExpirySweeper(
            writer: writer, meta: meta, interval: configuration.expirySweepInterval,
            idleReads: (configuration.idleReadsGiveBackInterval, configuration.idleReadsClock),
            logger: configuration.logger,
            clock: configuration.clock)
        logger?.log(level: .info, message: "Opened store", metadata: ["path": directory.path])
        if let outcome = environment.compactionOutcome { StoreCore.log(outcome, logger: logger, directory: directory) }
        if environment.recreatedUnfinishedDataFile {
            logger?.log(
                level: .warning,
                message: "Created the store afresh: its data file was left unfinished by an earlier creation "
                    + "(a full disk?) and held no data", metadata: ["path": directory.path])
        }
    }

    deinit {
        sweeper.stop()
        liveQueries.stop()
        // Reads noted for eviction since the last commit: one last commit folds them before the writer stops, so
        // that a short-lived reader's uses count (a widget, an extension).
        if !limits.isEmpty, !accessNotes.isEmpty { writer.foldNotedReads() }
        // An in-memory store's files were unlinked once open (see `EnvironmentRegistry`): nothing to remove.
        let (environment, teardown) = (self.environment, self.teardown)
        writer.stop {
            environment.close()
            teardown.finished()
        }
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
            // Maintenance opened the store first (with the keys and compression it was given, or none): the app's
            // must be those, or its records would be written plain under a key the app never saw applied.
            if let reason = sealingDisagreement(with: settings.encryption) {
                throw LocalStorageError.openFailed(path: path, reason: reason)
            }
            if settings.durability != environment.durability {
                do {
                    try environment.setDurability(settings.durability)
                } catch {
                    throw LocalStorageError.openFailed(path: path, reason: StoreCore.explain(error))
                }
            }
            if settings.limits != limits.store || settings.evictionPolicy != limits.policy {
                // The maintenance API opened the store without limits: the app's apply from its first commit,
                // and the types maintenance made ready note their reads from now on.
                limits.adopt(store: settings.limits, policy: settings.evictionPolicy)
                schemas.withLock { $0.noteRecency { [limits] in limits.tracksRecency(ofType: $0) } }
            }
            pinned = settings
        }
    }

    /// Why an open asking for `encryption` cannot use the sealing this core was opened with (its current key
    /// and previous keys), or nil.
    func sealingDisagreement(with encryption: StorageEncryption?) -> String? {
        let current = sealing.current?.bytes
        let wanted = encryption.map { [UInt8]($0.key) }
        let previous = Set(sealing.previous.map(\.bytes))
        if current != wanted || Set((encryption?.previousKeys ?? []).map { [UInt8]($0) }) != previous {
            return EnvironmentSettings.encryptionDiffers(openWithKey: current != nil, askedWithKey: wanted != nil)
        }
        return nil
    }

    private static func explain(_ error: any Error) -> String {
        if case LocalStorageError.decodingFailed(let reason) = error { return reason }
        guard let error = error as? LMDBError else { return String(describing: error) }
        if error.isInvalidFile { return "not an LMDB store, or its data file is damaged (\(error.message))" }
        if error.isVersionMismatch { return "the store was made by an incompatible LMDB version (\(error.message))" }
        switch error.code {
        case EACCES, EROFS: return "permission denied (\(error.message))"
        case ENOSPC, EDQUOT: return "the disk is full (\(error.message))"
        case ENOTDIR: return "a path component of the store's directory is a file, not a directory (\(error.message))"
        // The failing call and LMDB's code, without the Swift function that made it (ours, not the user's).
        default: return "\(error.call) failed: \(error.message) (\(error.code))"
        }
    }
}

extension CommitQueue {
    /// Queues an empty commit, whose eviction step folds the reads noted for eviction into the store.
    func foldNotedReads() {
        let logger = self.logger
        let notes = evictor?.notes
        queueForNextCommit(
            { _ in },
            finish: { error in
                guard let error else { return }
                notes?.foldFailed()
                logger?.log(
                    level: .warning, message: "Could not fold the reads noted for eviction",
                    metadata: ["error": "\(LocalStorageError.wrapping(error))"])
            })
    }
}
