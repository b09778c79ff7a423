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
    }

    private final class WeakCore: @unchecked Sendable {
        // @unchecked: only read and written under the registry's mutex.
        weak var core: StoreCore?
        init(_ core: StoreCore) { self.core = core }
    }

    private static let entries = Mutex<[Key: WeakCore]>([:])

    /// The core for `configuration`'s directory, opening it when no store in this process has.
    ///
    /// - Throws: `openFailed` when a store of this process has the directory open with other
    ///   environment settings (``EnvironmentSettings``), naming the first that differs.
    static func core(for configuration: LocalStorageConfiguration) throws -> StoreCore {
        if configuration.isInMemory {
            return try StoreCore(directory: try makeInMemoryDirectory(), configuration: configuration)
        }
        return try core(directory: configuration.storeDirectory, configuration: configuration,
                        settings: EnvironmentSettings(configuration))
    }

    /// The core for a store directory (the one holding `data.mdb`), opening it when no store in this
    /// process has; the CLI's maintenance API opens stores by that directory.
    ///
    /// `settings` are the environment settings a ``LocalStorage`` asks for: the first such open pins them
    /// and every later one must agree. Maintenance passes nil and takes the environment as it is.
    static func core(directory: URL, configuration: LocalStorageConfiguration,
                     settings: EnvironmentSettings? = nil) throws -> StoreCore {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw LocalStorageError.openFailed(path: directory.path, reason: "\(error.localizedDescription)")
        }
        var info = stat()
        guard stat(directory.path, &info) == 0 else {
            throw LocalStorageError.openFailed(path: directory.path, reason: String(cString: strerror(errno)))
        }
        let key = Key(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        return try entries.withLock { entries in
            if let core = entries[key]?.core {
                if let settings { try core.adopt(settings, path: directory.path) }
                return core
            }
            let core = try StoreCore(directory: directory, configuration: configuration)
            if let settings { try core.adopt(settings, path: directory.path) }
            entries[key] = WeakCore(core)
            entries = entries.filter { $0.value.core != nil }
            return core
        }
    }

    private static func makeInMemoryDirectory() throws -> URL {
        let shm = URL(fileURLWithPath: "/dev/shm", isDirectory: true)
        let base = access(shm.path, W_OK) == 0 ? shm : FileManager.default.temporaryDirectory
        let directory = base.appendingPathComponent("LocalStorageKit-\(UUID().uuidString)", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw LocalStorageError.openFailed(path: directory.path, reason: "\(error.localizedDescription)")
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

    init(_ configuration: LocalStorageConfiguration) {
        durability = configuration.durability
        mapSize = configuration.mapSize
        maxMapSize = configuration.maxMapSize
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
        return nil
    }
}
