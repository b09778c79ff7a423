import Foundation

/// Settings for a ``LocalStorage``.
///
/// Two stores on one directory in one process share one LMDB environment. Its settings, ``durability``,
/// ``mapSize``, ``maxMapSize``, ``limits`` and ``evictionPolicy``, must agree: a second open that asks for
/// others throws
/// ``LocalStorageError/openFailed(path:reason:)`` naming the setting; ``limits`` and ``evictionPolicy`` must
/// also agree with another process's that has the store open (the first to open it records them). ``expirySweepInterval`` and
/// ``externalChangePollInterval`` drive work shared by the environment and are taken from the first open.
/// Every other setting belongs to each store.
///
/// ```swift
/// var config = LocalStorageConfiguration()
/// config.databaseDirectory = .applicationSupportDirectory
/// config.durability = .relaxed
/// let storage = try LocalStorage(configuration: config)
/// ```
public struct LocalStorageConfiguration: Sendable {
    /// Keeps the store in private temporary files (on `/dev/shm` when it exists) that are unlinked as soon
    /// as they are open: the memory is freed when the store closes or the process ends, however it ends,
    /// and nothing is left behind. Implies ``StorageDurability/none``.
    public var isInMemory: Bool = false
    /// Deletes the expired records a read meets, after the read.
    public var autoPurgeExpiredOnRead: Bool = false
    /// The directory that holds the store. The store itself lives in a `LocalStorage` folder inside it.
    public var databaseDirectory: URL = .applicationSupportDirectory
    /// Where the store reports what it does; nil for silence.
    public var logger: (any StorageLogger)?
    /// How durable each commit is.
    public var durability: StorageDurability = .full
    /// The initial size of the memory map in bytes; it grows on demand up to ``maxMapSize``. On Linux and macOS,
    /// where the process has the address space, the store maps all of ``maxMapSize`` when it opens (up to 64 GiB;
    /// past that it grows from there), so that the map does not grow under a running `write` body; this is only
    /// address space: the file grows with the data, not with the map.
    public var mapSize: Int = 64 << 20
    /// The largest the memory map may grow to; saves past it throw ``LocalStorageError/storageFull``. At least
    /// 1 MiB: a smaller one makes the open throw ``LocalStorageError/openFailed(path:reason:)``. Below
    /// ``mapSize`` it is still the limit: the map starts at `maxMapSize` then. A store whose data file is already
    /// larger (it grew under a larger limit) opens and reads: its map is then the file plus the reserve kept for
    /// deletes, saves fit only in the pages it has free, and deletes bring it back under the limit.
    public var maxMapSize: Int = 64 << 30
    /// Bounds on the whole store (nil, the default: none). Every commit leaves them satisfied by evicting
    /// expired records, then ``evictionPolicy``'s victims. Belongs to the environment: every store on one
    /// directory in a process must agree.
    public var limits: StorageLimits?
    /// Which records a bounded store evicts first after the expired ones (types with their own
    /// ``LocalStorable/storageLimits`` included). Belongs to the environment, like ``limits``.
    public var evictionPolicy: StorageEvictionPolicy = .adaptive
    /// A memory tier of decoded values in front of the store (nil, the default: none). Per instance.
    public var memoryCache: MemoryCacheConfiguration?
    /// How long live queries wait after a write for more writes before rerunning.
    public var liveQueryCoalescing: Duration = .milliseconds(50)
    /// Makes live queries behave as the first design did (sleep out the whole window before every rerun,
    /// compare results by their JSON), so the benchmark can measure both in one run. Not for apps.
    @_spi(Benchmarks) public var liveQueriesUseTheFirstDesign = false
    /// A new store made with this set keeps no count tree, so counts and page totals walk the index: the
    /// benchmark measures the tree's write cost against it. Not for real stores.
    @_spi(Benchmarks) public var withoutCountTree = false
    /// The open leaves the store's key check value (and its sealed dictionaries) as they are, even when
    /// `encryption`'s current key is not the one that sealed them: maintenance that only reads or checks
    /// the store must not move it to another key (only `rekey` and `import` do).
    var keepsKeyCheck = false
    /// Whether the open refuses an LMDB environment with no store in it (no `meta` database) instead of making
    /// one there, as an app's open does: the maintenance tool's commands other than `import` (trial88 #4: `stats`
    /// turned an empty environment of another program into a store).
    var requiresExistingStore = false
    /// Whether the open leaves an older layout as it is instead of upgrading it (the maintenance tool's commands that
    /// only read: an upgrade locks out the older version that wrote the store).
    var keepsLayout = false
    /// With ``expirySweepInterval`` nil, how often the pooled read transactions no read took since the last time give
    /// their reader slots back (review-108 R10: otherwise only reads trimmed the pool, and an idle process kept its
    /// slots), on `idleReadsClock`: real time, not ``clock`` (whose sleepers tests count). Tests set a virtual one.
    var idleReadsGiveBackInterval: Duration = .seconds(60)
    var idleReadsClock: any StorageClock = SystemClock()
    /// The newest layout the open upgrades an older store to, nil for this version's (``TypeRegistry/layout``).
    /// Maintenance writes no compact record header, so it upgrades a store to the count tree's layout at most:
    /// moving it to layout 4 would lock out the version that wrote it for nothing.
    var upgradesLayoutAtMostTo: Int? = nil
    /// Whether the map starts at ``mapSize`` and doubles on demand even where the whole of ``maxMapSize`` could be
    /// mapped at open (tests of the map's growth set it; iOS and its relatives always grow).
    @_spi(Testing) public var growsMapFromMapSize = false
    /// Internal: a key may be given to a store whose records were written without one (`rekey` seals them,
    /// then writes the key check value); an app's open throws instead.
    var sealsPlainStore = false
    /// The format new payloads are written in: the compact binary format by default (several times
    /// faster to decode than JSON); records written as JSON keep reading either way.
    public var codec: StorageCodec = .binary
    /// How often the background sweep purges expired records; nil turns it off. Off by default for
    /// in-memory stores. Stores sharing a directory share one sweep, set by the first to open it. Each sweep also
    /// gives back the reader slots of read transactions the store kept and no read needed since; with the sweep
    /// off, that happens once a minute.
    public var expirySweepInterval: Duration? = .seconds(60)
    /// How often live queries check for writes by other processes (set by the first store to open a
    /// directory, for every store sharing it). On Linux a watch of the data file checks as soon as another
    /// process commits; this interval is the fallback where the file system does not report writes.
    public var externalChangePollInterval: Duration = .milliseconds(250)
    /// How many events a change stream holds for a consumer that has not read them yet; past it the
    /// oldest are dropped, so a slow consumer never blocks the writer or grows memory without bound.
    public var changeStreamBufferSize: Int = 10_000
    /// How many changes the store's change log keeps at least, for ``LocalStorage/changes(of:since:)``
    /// and for other processes to follow: a token that more than this many changes follow throws
    /// ``LocalStorageError/changeTokenExpired`` (whether or not the log has trimmed them yet). Belongs to the
    /// environment (taken from the first open).
    public var changeLogRetention: Int = 100_000
    /// A Redis or Valkey server that several instances share, with this store as their near cache; nil (the
    /// default) for a store of this host alone. See ``SharedTierConfiguration``.
    public var sharedTier: SharedTierConfiguration?

    /// The permission bits of the store's files (`data.mdb`, `lock.mdb`): `0o600` by default, readable and
    /// writable by their owner alone. The store's folder gets the same bits plus execute wherever read is
    /// granted (`0o700` by default). Set `0o660` to share a store with a group of cooperating processes.
    /// The process's umask changes neither; a store that exists keeps the mode it was made with. The owner
    /// must keep read and write permission. Execute bits apply to the folder only (`0o777` gives files `0o666`).
    public var filePermissions: Int = 0o600
    /// Seals every payload with a key the app supplies (nil, the default: payloads are stored as they are).
    /// Opening a sealed store without its key, or with another, throws ``LocalStorageError/openFailed(path:reason:)``.
    /// Ids, type names and indexed values stay readable on disk. See ``StorageEncryption``.
    public var encryption: StorageEncryption?
    /// Whether payloads are compressed (``StorageCompression/none`` by default). See ``StorageCompression``.
    public var compression: StorageCompression = .none
    /// Whether the store gives its free pages back to the disk when it opens (``StorageCompaction/never`` by
    /// default). See ``StorageCompaction``.
    public var compaction: StorageCompaction = .never

    /// The clock the store reads and waits on (expiry, sweeps, coalescing, backoff, lease deadlines): the
    /// system's by default; tests set a ``VirtualClock``. Belongs to the environment (taken from the first open).
    @_spi(Testing) public var clock: any StorageClock = SystemClock()

    /// A configuration with every default.
    public init() {}

    /// The on-disk store in the default directory.
    public static var `default`: LocalStorageConfiguration { LocalStorageConfiguration() }

    /// A private store for tests and throwaway caches; nothing of it outlives the store or the process.
    public static var inMemory: LocalStorageConfiguration {
        var configuration = LocalStorageConfiguration()
        configuration.isInMemory = true
        configuration.durability = .none
        configuration.expirySweepInterval = nil
        return configuration
    }

    /// The directory LMDB's files go in.
    var storeDirectory: URL {
        databaseDirectory.appendingPathComponent("LocalStorage", isDirectory: true)
    }
}

#if !canImport(Darwin)
extension URL {
    /// The per-user application data directory: `$XDG_DATA_HOME`, else `~/.local/share`.
    ///
    /// Foundation provides this on Apple platforms; LocalStorageKit supplies it where it is missing.
    public static var applicationSupportDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg, isDirectory: true)
        }
        let home =
            environment["HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".local/share", isDirectory: true)
    }
}
#endif

extension LocalStorageConfiguration {
    /// What is wrong with a size, count or interval that no store can use (nil when nothing is), for an
    /// `openFailed` that names the setting instead of a store that quietly does something else.
    /// The smallest ``maxMapSize`` a store can work in: a map of a few pages fills with the store's own
    /// databases, and then a delete cannot make room (LMDB reuses a freed page only two commits later).
    static let minimumMaxMapSize = 1 << 20

    /// What an `openFailed` about these settings names: "(in memory)" for an in-memory store (naming the default
    /// folder would send the reader there), the URL itself when it is not a file URL (its path is no folder of
    /// the user's), else the store's folder.
    var shownPath: String {
        if isInMemory { return "(in memory)" }
        if databaseDirectory.scheme != nil, !databaseDirectory.isFileURL { return databaseDirectory.absoluteString }
        return storeDirectory.path
    }

    var settingsProblem: String? {
        if mapSize <= 0 { return "mapSize must be a positive number of bytes, not \(mapSize)" }
        if !isInMemory, databaseDirectory.scheme != nil, !databaseDirectory.isFileURL {
            return
                "databaseDirectory must be a file URL (URL(fileURLWithPath:)), not \(databaseDirectory.absoluteString)"
        }
        if maxMapSize < Self.minimumMaxMapSize {
            return "maxMapSize must be at least \(Self.minimumMaxMapSize) bytes (1 MiB), not \(maxMapSize): a smaller "
                + "map cannot hold the store's own databases with room to reuse the pages a delete frees"
        }
        if liveQueryCoalescing < .zero { return "liveQueryCoalescing must not be negative (\(liveQueryCoalescing))" }
        if let interval = expirySweepInterval, interval <= .zero {
            return "expirySweepInterval must be positive (\(interval)); nil turns the sweep off"
        }
        if externalChangePollInterval <= .zero {
            return "externalChangePollInterval must be positive (\(externalChangePollInterval))"
        }
        if changeStreamBufferSize < 1 {
            return "changeStreamBufferSize must be at least 1 (\(changeStreamBufferSize)): a stream holding no "
                + "event would drop every change its consumer is not already waiting for"
        }
        if changeLogRetention < 1 { return "changeLogRetention must be at least 1 (\(changeLogRetention))" }
        if let memoryCache, memoryCache.maxRecords < 1 || memoryCache.maxBytes < 1 {
            return "memoryCache: maxRecords and maxBytes must be at least 1 (got \(memoryCache.maxRecords) and "
                + "\(memoryCache.maxBytes))"
        }
        return nil
    }
}
