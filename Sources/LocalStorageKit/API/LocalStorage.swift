import Foundation

/// A cache of Codable records in LMDB: save with a time to live, fetch in microseconds, query
/// through declared indexes, page, observe, migrate.
///
/// ```swift
/// let storage = try LocalStorage()
/// try await storage.save(product, expiration: .hours(2))
/// let item: Product? = try await storage.fetch(Product.self, id: "sku_108")
/// ```
///
/// `LocalStorage` is safe to use from any task or thread. Two stores on the same directory in one
/// process share one LMDB environment and one writer; the store closes when its last reference goes.
/// Writes from every task are committed together by a single writer thread (group commit), and each
/// call returns once its write is durable (per ``LocalStorageConfiguration/durability``).
public final class LocalStorage: Sendable {
    let core: StoreCore

    /// The configuration this store was opened with.
    ///
    /// Two stores on one directory share the settings of the environment (``LocalStorageConfiguration/durability``,
    /// ``LocalStorageConfiguration/mapSize``, ``LocalStorageConfiguration/maxMapSize``), which must agree; the
    /// others (``LocalStorageConfiguration/logger``, ``LocalStorageConfiguration/codec``,
    /// ``LocalStorageConfiguration/autoPurgeExpiredOnRead``, ``LocalStorageConfiguration/memoryCache``, the
    /// live-query and change-stream settings) are this store's own.
    public let configuration: LocalStorageConfiguration

    /// The tiers under the public methods, opened once from the configuration: the one seam every public
    /// method forwards to (``RecordStore``, ``TierStack``).
    let tiers: any RecordStore
    /// The local store at the bottom of ``tiers``, with what the public methods' own reads share.
    let local: LocalRecordStore
    /// Decoded values of hot records (``LocalStorageConfiguration/memoryCache``; nil: none).
    let memoryTier: MemoryTier?
    /// The shared tier this store is the near cache of, when ``LocalStorageConfiguration/sharedTier`` names one.
    let sharedTier: SharedTier?

    /// Where this store reports what it does.
    var logger: (any StorageLogger)? { configuration.logger }
    /// Whether operations are timed for the logger: a flag, so that an operation without a logger copies no
    /// existential out of the configuration (two copies and two destroys were ~7% of a memory-tier hit).
    private let timesOperations: Bool
    /// Whether `fetch(_:id:)` first asks the tiers for a value held in memory, synchronously
    /// (``RecordStore/heldValue(_:id:schema:)``): with a memory tier and no logger to time the operation.
    let answersFromMemory: Bool

    /// Opens the store described by `configuration` (by default, on disk in the default directory).
    ///
    /// - Throws: ``LocalStorageError/openFailed(path:reason:)`` when the directory cannot hold a store.
    public convenience init(configuration: LocalStorageConfiguration = .default) throws {
        try self.init(configuration: configuration, logger: configuration.logger)
    }

    /// Opens the store described by `configuration`, reporting to `logger`.
    ///
    /// - Throws: ``LocalStorageError/openFailed(path:reason:)`` when the directory cannot hold a store, or
    ///   when another store in this process has the directory open with a different `durability`,
    ///   `mapSize` or `maxMapSize` (the reason names the setting).
    public init(configuration: LocalStorageConfiguration, logger: (any StorageLogger)?) throws {
        var configuration = configuration
        configuration.logger = logger
        if let problem = configuration.settingsProblem ?? StoreCore.openProblem(configuration) {
            throw LocalStorageError.openFailed(path: configuration.shownPath, reason: problem)
        }
        let core = try EnvironmentRegistry.core(for: configuration)
        self.core = core
        self.configuration = configuration
        timesOperations = logger != nil
        let stack = try TierStack(configuration: configuration, core: core)
        (tiers, local, memoryTier, sharedTier) = (stack.top, stack.local, stack.memoryTier, stack.sharedTier)
        answersFromMemory = logger == nil && stack.memoryTier != nil && stack.sharedTier == nil
    }

    deinit {
        tiers.close()
    }

    /// A repository: the same operations bound to one type.
    public func repository<T: LocalStorable>(_ type: T.Type) -> LocalRepository<T> {
        LocalRepository(storage: self)
    }

    /// The number of transactions the writer has committed (shows group commit at work).
    var commitCount: Int { core.writer.commitCount }

    /// The number of payloads decoded so far.
    var decodeCount: Int { core.decodes.value }

    // MARK: - Plumbing

    /// Runs a public operation: maps every error to ``LocalStorageError`` and reports its duration.
    @inline(__always)
    nonisolated(nonsending) func operation<R>(
        _ name: String, _ body: nonisolated(nonsending) () async throws -> R
    )
        async throws(LocalStorageError) -> R
    {
        let start = timesOperations ? ContinuousClock.now : nil
        defer { if let start { report(name, since: start) } }
        do {
            return try await body()
        } catch {
            throw LocalStorageError.wrapping(error)
        }
    }

    /// Runs a public operation that calls a caller's closure: the closure's own error (a ``CallerError``)
    /// and the caller's cancellation (`CancellationError`) come out unchanged, every other error as a
    /// ``LocalStorageError``.
    nonisolated(nonsending) func operationPassingCallerErrors<R>(
        _ name: String, _ body: nonisolated(nonsending) () async throws -> R
    )
        async throws -> R
    {
        let start = timesOperations ? ContinuousClock.now : nil
        defer { if let start { report(name, since: start) } }
        do {
            return try await body()
        } catch let error as CallerError {
            throw error.underlying
        } catch let error as CancellationError {
            // The caller's task was cancelled while it waited on a load or ran its own: Swift's own error.
            throw error
        } catch {
            // So is a read of the shared tier that the cancellation cut short (and only that: an error of its
            // own, a record not found or a write's unknown outcome, comes out as it is).
            if RESPConnection.isCancelledByCaller(error) { throw CancellationError() }
            throw LocalStorageError.wrapping(error)
        }
    }

    /// Reports the duration of `name`, which began at `start`, to the logger.
    private func report(_ name: String, since start: ContinuousClock.Instant) {
        guard let logger else { return }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        logger.record(duration: seconds, operation: name)
    }
}
