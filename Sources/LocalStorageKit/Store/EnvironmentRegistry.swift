import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes every ``LocalStorage`` on one directory in this process share one ``StoreCore``.
///
/// Keyed by the directory's device and inode, not its path, so two spellings of one directory
/// (symlinks, `..`) still share; an entry lives as long as some store holds its core.
enum EnvironmentRegistry {
    private struct Key: Hashable {
        let device: UInt64
        let inode: UInt64

        init(device: UInt64, inode: UInt64) {
            self.device = device
            self.inode = inode
        }

        /// The key of what `path` names now; nil when it names nothing.
        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        }
    }

    private final class WeakCore: @unchecked Sendable {
        // @unchecked: only read and written under the registry's mutex.
        weak var core: StoreCore?
        /// The core's teardown, which outlives it: a weak reference is nil as soon as the core's `deinit`
        /// begins, while it still holds the store's files.
        let teardown: TeardownSignal
        init(_ core: StoreCore) {
            self.core = core
            teardown = core.teardown
        }
    }

    /// How long an open waits for a closing core of its directory to let go of the files before it opens
    /// the directory anyway.
    static let teardownWait: Duration = .seconds(30)

    private static let entries = Mutex<[Key: WeakCore]>([:])

    /// The core for `configuration`'s directory, opening it when no store in this process has.
    ///
    /// - Throws: `openFailed` when a store of this process has the directory open with other
    ///   environment settings (``EnvironmentSettings``), naming the first that differs.
    static func core(for configuration: LocalStorageConfiguration) throws -> StoreCore {
        if configuration.isInMemory { return try inMemoryCore(configuration) }
        return try core(
            directory: configuration.storeDirectory, configuration: configuration,
            settings: EnvironmentSettings(configuration))
    }

    /// The core for a store directory (the one holding `data.mdb`), opening it when no store in this
    /// process has; the CLI's maintenance API opens stores by that directory.
    ///
    /// `settings` are the environment settings a ``LocalStorage`` asks for: the first such open pins them
    /// and every later one must agree. Maintenance passes nil and takes the environment as it is.
    static func core(
        directory: URL, configuration: LocalStorageConfiguration,
        settings: EnvironmentSettings? = nil
    ) throws -> StoreCore {
        // Checked before the folder and files exist: a key of the wrong length leaves no new store behind.
        if let problem = StoreCore.openProblem(configuration) {
            throw LocalStorageError.openFailed(path: directory.path, reason: problem)
        }
        let folderMode = StoreFileModes.folderMode(for: configuration.filePermissions)
        if let problem = StoreFileModes.makeFolder(directory.path, mode: folderMode) {
            throw LocalStorageError.openFailed(path: directory.path, reason: problem)
        }
        var info = stat()
        guard stat(directory.path, &info) == 0 else {
            throw LocalStorageError.openFailed(path: directory.path, reason: String(cString: strerror(errno)))
        }
        let key = Key(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        return try entries.withLock { entries in
            // A directory deleted while its store stayed open may free its inode for a new directory: the
            // open store is this directory's only if the data file here is the one it has open (a renamed
            // directory still shares).
            if let core = entries[key]?.core, let open = core.environment.dataFileIdentity,
                Key(path: directory.appendingPathComponent("data.mdb").path)
                    == Key(device: open.device, inode: open.inode)
            {
                if let settings { try core.adopt(settings, path: directory.path) }
                return core
            }
            // The last store on the directory is closing: its environment, writer and lock go first, so that
            // this open never runs beside them on the same files (a compaction at open would find the store
            // in use, and LMDB forbids two environments of one process on one file).
            if let closing = entries[key], closing.core == nil, !closing.teardown.wait(upTo: teardownWait) {
                throw LocalStorageError.openFailed(
                    path: directory.path,
                    reason: "the store is still closing in this process (its writer has queued work); try again")
            }
            let core = try StoreCore(directory: directory, configuration: configuration, settings: settings)
            if let settings { try core.adopt(settings, path: directory.path) }
            entries[key] = WeakCore(core)
            // A closing core stays listed until its teardown is over: an open of its directory meanwhile
            // (after another store's open dropped the closed ones) must still wait for it.
            entries = entries.filter { $0.value.core != nil || !$0.value.teardown.isFinished }
            return core
        }
    }

    /// Whether a store of this process has the store directory `directory` open, or is closing it (waited for up
    /// to ``teardownWait``).
    static func isOpen(_ directory: URL) -> Bool {
        guard let key = Key(path: directory.path) else { return false }
        let (open, closing) = entries.withLock { entries in
            (entries[key]?.core != nil, entries[key].flatMap { $0.core == nil ? $0.teardown : nil })
        }
        if open { return true }
        // A store closing in this process still uses the files while its writer drains its queue (and holds
        // LMDB's lock, which this process's own check of `lock.mdb` cannot see): it is open until it let go.
        if let closing, !closing.wait(upTo: teardownWait) { return true }
        // An open that waited for the same teardown may have opened the store meanwhile.
        return closing != nil && entries.withLock { $0[key]?.core != nil }
    }

    /// A private store whose files are unlinked as soon as LMDB has them open: the environment keeps
    /// working on its open descriptors (nothing reopens an in-memory store by path), and the kernel frees
    /// the files when the process lets go of them, whether the store closes, the process exits without
    /// closing it or is killed.
    private static func inMemoryCore(_ configuration: LocalStorageConfiguration) throws -> StoreCore {
        let directory = try makeInMemoryDirectory()
        let core: StoreCore
        do {
            core = try StoreCore(directory: directory, configuration: configuration)
        } catch {
            removeInMemoryFiles(directory)
            throw error
        }
        if let problem = removeInMemoryFiles(directory) {
            throw LocalStorageError.openFailed(
                path: directory.path,
                reason: "cannot unlink the in-memory store's files: " + problem)
        }
        return core
    }

    /// Unlinks an in-memory store's files and its directory; returns what failed, if anything did.
    @discardableResult
    private static func removeInMemoryFiles(_ directory: URL) -> String? {
        var problems: [String] = []
        for name in ["data.mdb", "lock.mdb", StoreOpenLock.fileName] {
            let path = directory.appendingPathComponent(name).path
            if unlink(path) != 0 && errno != ENOENT {
                problems.append("\(name): \(String(cString: strerror(errno)))")
            }
        }
        if rmdir(directory.path) != 0 {
            problems.append("\(directory.lastPathComponent): \(String(cString: strerror(errno)))")
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    private static func makeInMemoryDirectory() throws -> URL {
        let shm = URL(fileURLWithPath: "/dev/shm", isDirectory: true)
        let base = access(shm.path, W_OK) == 0 ? shm : FileManager.default.temporaryDirectory
        let directory = base.appendingPathComponent("LocalStorageKit-\(UUID().uuidString)", isDirectory: true)
        if let problem = StoreFileModes.makeFolder(directory.path, mode: 0o700) {
            throw LocalStorageError.openFailed(path: directory.path, reason: problem)
        }
        return directory
    }
}

/// The settings that belong to an LMDB environment, shared by every ``LocalStorage`` on its directory in
/// one process: they must agree.
struct EnvironmentSettings: Sendable, Equatable {
    let durability: StorageDurability
    let mapSize: Int
    let maxMapSize: Int
    let limits: StorageLimits?
    let evictionPolicy: StorageEvictionPolicy
    let encryption: StorageEncryption?
    let compression: StorageCompression

    init(_ configuration: LocalStorageConfiguration) {
        encryption = configuration.encryption
        compression = configuration.compression
        durability = configuration.durability
        mapSize = configuration.mapSize
        maxMapSize = configuration.maxMapSize
        limits = configuration.limits.flatMap { $0.isUnbounded ? nil : $0 }  // StorageLimits() is no limit
        evictionPolicy = configuration.evictionPolicy
    }

    /// Why an open cannot share a store open in this process with other keys. Keys are never named in a
    /// message; which side has one is enough to act on.
    static func encryptionDiffers(openWithKey: Bool, askedWithKey: Bool) -> String {
        switch (openWithKey, askedWithKey) {
        case (false, true):
            "encryption differs: the store is open in this process without encryption, this open gives a key"
        case (true, false):
            "encryption differs: the store is open in this process with a key, this open gives none"
        default:
            "encryption differs: the store is open in this process with other keys"
        }
    }

    /// Why `other` cannot share an environment opened with these settings, or nil when it can.
    func disagreement(with other: EnvironmentSettings) -> String? {
        if durability != other.durability {
            return "durability differs: the store is open in this process with .\(durability), "
                + "this open asks for .\(other.durability)"
        }
        if mapSize != other.mapSize {
            return "mapSize differs: the store is open in this process with \(mapSize) bytes, "
                + "this open asks for \(other.mapSize)"
        }
        if maxMapSize != other.maxMapSize {
            return "maxMapSize differs: the store is open in this process with \(maxMapSize) bytes, "
                + "this open asks for \(other.maxMapSize)"
        }
        if limits != other.limits {
            return "limits differ: the store is open in this process with \(limits?.description ?? "no limits"), "
                + "this open asks for \(other.limits?.description ?? "no limits")"
        }
        if evictionPolicy != other.evictionPolicy {
            return "evictionPolicy differs: the store is open in this process with .\(evictionPolicy), "
                + "this open asks for .\(other.evictionPolicy)"
        }
        if encryption != other.encryption {
            return Self.encryptionDiffers(openWithKey: encryption != nil, askedWithKey: other.encryption != nil)
        }
        if compression != other.compression {
            return "compression differs: the store is open in this process with .\(compression), "
                + "this open asks for .\(other.compression)"
        }
        return nil
    }
}

/// The settings across processes: the first process to open a store records its bounds in the store's lock file
/// (see ``StoreOpenLock``), and a process that opens the store while that one has it open must agree with them.
/// Only the settings that decide what happens to every process's records are compared: `limits` and
/// `evictionPolicy` (a process with other limits evicted the others' records at its first commit). Durability
/// and the map's sizes are each process's own in LMDB, and the key is checked by the store's key check value.
extension EnvironmentSettings {
    /// The settings as another process reads them: one `name=value` line each.
    var record: [UInt8] { Array(fields.map { "\($0.name)=\($0.value)" }.joined(separator: "\n").utf8) }

    private var fields: [(name: String, value: String)] {
        [("limits", limits?.description ?? "no limits"), ("evictionPolicy", ".\(evictionPolicy)")]
    }

    /// Why these settings cannot open a store another process has open with the settings it recorded
    /// (`record`), naming the first that differs; nil when they agree. A setting the record does not hold
    /// (written by another version) is not compared.
    func disagreement(withRecord record: [UInt8]) -> String? {
        var recorded: [String: String] = [:]
        for line in String(decoding: record, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            recorded[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        for (name, value) in fields {
            guard let theirs = recorded[name], theirs != value else { continue }
            return "\(name) \(name == "limits" ? "differ" : "differs"): another process has the store open with "
                + "\(theirs), this open asks for \(value)"
        }
        return nil
    }
}
