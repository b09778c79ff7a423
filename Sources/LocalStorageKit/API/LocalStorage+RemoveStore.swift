import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LocalStorage {
    /// Removes the store an app keeps in `directory` (the same directory it sets as
    /// ``LocalStorageConfiguration/databaseDirectory``): its data and lock files and its folder.
    ///
    /// The way out for a store that cannot be used: one that fails to open with
    /// ``LocalStorageError/openFailed(path:reason:)`` because its file is damaged, or that `localstorage
    /// verify` calls damaged. The store is a cache: remove it, open a new one in the same place and let it
    /// fill again (or first salvage what can be read with `localstorage verify --repair`).
    ///
    /// ```swift
    /// do {
    ///     storage = try LocalStorage(configuration: configuration)
    /// } catch LocalStorageError.openFailed {
    ///     try LocalStorage.removeStore(at: configuration.databaseDirectory)
    ///     storage = try LocalStorage(configuration: configuration)
    /// }
    /// ```
    /// Removing a directory that holds no store does nothing.
    /// - Throws: ``LocalStorageError/storageError(code:message:)`` with `EBUSY` while this process or
    ///   another has the store open (close every ``LocalStorage`` on it first), or with the file system's
    ///   error when the files cannot be removed.
    public static func removeStore(at directory: URL) throws {
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = directory
        let store = configuration.storeDirectory
        guard FileManager.default.fileExists(atPath: store.path) else { return }
        try StoreInUse.check(store, doing: "remove the store at")
        do {
            try FileManager.default.removeItem(at: store)
        } catch {
            let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code ?? Int(EIO)
            throw LocalStorageError.storageError(
                code: Int32(truncatingIfNeeded: code),
                message: "cannot remove the store at \(store.path): \(error.localizedDescription)")
        }
    }
}
