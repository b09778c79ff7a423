import Foundation

/// What `compact` did: the sizes before and after, and the check of the copy.
@_spi(Maintenance) public struct CompactReport: Codable, Sendable {
    /// The directory of the compacted copy.
    public var output: String
    /// The size of the store's data file in bytes.
    public var originalBytes: Int
    /// The size of the copy's data file in bytes.
    public var compactedBytes: Int
    /// ``StoreMaintenance/verify(progress:)`` on the copy.
    public var verify: VerifyReport
}

extension StoreMaintenance {
    /// Writes a compacted copy of the store (free pages left out, every tree packed full) as the store of a
    /// configuration whose `databaseDirectory` is `databaseDirectory` (that is, into
    /// `databaseDirectory/LocalStorage/`), then verifies the copy.
    ///
    /// The copy is taken from one snapshot, so an app may keep writing meanwhile. An app opens it by
    /// setting `databaseDirectory` to the same directory; `--store` accepts that directory too.
    /// - Throws: ``MaintenanceError/outputExists(path:)`` when the output already holds a store.
    public func compact(
        to databaseDirectory: URL, progress: MaintenanceProgressHandler? = nil
    ) async throws -> CompactReport {
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = databaseDirectory
        let output = configuration.storeDirectory
        let fileManager = FileManager.default
        let outputFile = output.appendingPathComponent("data.mdb")
        // A directory holding a data file itself is a store directory: a copy in its `LocalStorage` folder
        // would hide behind it (`--store` names the store whose data file a directory holds first).
        let heldHere = databaseDirectory.appendingPathComponent("data.mdb")
        for file in [outputFile, heldHere] where fileManager.fileExists(atPath: file.path) {
            throw MaintenanceError.outputExists(path: file.path)
        }
        // The copy keeps whom the store's data file is shared with; its owner (the user running compact) may
        // always read and write it, even when the store itself is read-only.
        let fileMode = (StoreFileModes.mode(of: directory.appendingPathComponent("data.mdb").path) ?? 0o600) | 0o600
        let folderMode = StoreFileModes.folderMode(for: fileMode)
        if let problem = StoreFileModes.makeFolder(output.path, mode: folderMode) {
            throw MaintenanceError.invalidArgument(problem)
        }
        progress?(MaintenanceProgress(task: "compact", completed: 0, total: nil))
        // The copy is made in a folder of its own and moved into place whole: a copy that fails part way (a full
        // disk) or is killed left a truncated data.mdb that refused a retry and opened as a damaged store.
        let partial = output.appendingPathComponent(".compacting-\(UUID().uuidString)", isDirectory: true)
        if let problem = StoreFileModes.makeFolder(partial.path, mode: 0o700) {
            throw MaintenanceError.invalidArgument(problem)
        }
        defer {
            do {
                if fileManager.fileExists(atPath: partial.path) { try fileManager.removeItem(at: partial) }
            } catch {
                // Left behind: a hidden folder, not a store; nothing reads it.
            }
        }
        let copied = partial.appendingPathComponent("data.mdb")
        try StoreMaintenance.mappingErrors { try environment.copyCompacted(to: partial.path) }
        if let problem = StoreFileModes.setMode(copied.path, fileMode) {
            throw MaintenanceError.invalidArgument(problem)
        }
        // On disk before it takes its name (LMDB's copy does not sync it), and the name after.
        try Self.sync(copied.path, what: "the compacted copy")
        // A rename, not a link: file systems without hard links (FAT, some network shares) take it too.
        guard !fileManager.fileExists(atPath: outputFile.path) else {
            throw MaintenanceError.outputExists(path: outputFile.path)
        }
        guard rename(copied.path, outputFile.path) == 0 else {
            throw MaintenanceError.invalidArgument(
                "cannot move the compacted copy to \(outputFile.path): \(String(cString: strerror(errno)))")
        }
        // The copy has its name now: a folder that cannot be synced only leaves that name's durability to the file
        // system (as the compaction at open does); the copy is reported either way.
        LMDBLockFile.syncFolder(output.path)
        progress?(MaintenanceProgress(task: "compact", completed: 1, total: 1))
        // Checked as the source was opened: a key it did not use (a plain store) is not used on the copy either,
        // and the check does not move the copy's key check value (a rotation is `rekey`'s work).
        // Nor does it upgrade the copy's layout: the app that owns the store may be of the layout it has.
        let copy = try await StoreMaintenance(
            directory: output, encryption: hasKeyCheck ? encryption : nil, movesKeyCheck: false, upgradesLayout: false)
        return CompactReport(
            output: output.path,
            originalBytes: try Self.fileSize(directory.appendingPathComponent("data.mdb")),
            compactedBytes: try Self.fileSize(outputFile), verify: try copy.verify(progress: progress))
    }

    /// `fsync`s the file or folder at `path`.
    ///
    /// - Throws: ``MaintenanceError/invalidArgument(_:)`` saying which, when it cannot be opened or synced.
    static func sync(_ path: String, what: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0, fsync(descriptor) == 0 else {
            let problem = String(cString: strerror(errno))
            if descriptor >= 0 { close(descriptor) }
            throw MaintenanceError.invalidArgument("cannot sync \(what) (\(path)): \(problem)")
        }
        close(descriptor)
    }

    /// The size of a file in bytes.
    ///
    /// - Throws: ``LocalStorageError`` when the file system cannot say (the report would otherwise show 0).
    static func fileSize(_ url: URL) throws -> Int {
        let attributes = try mappingErrors { try FileManager.default.attributesOfItem(atPath: url.path) }
        return (attributes[.size] as? NSNumber)?.intValue ?? 0
    }
}

/// What `compact` without `--output` did: the data file's size before and after it was compacted in place.
@_spi(Maintenance) public struct CompactInPlaceReport: Codable, Sendable {
    /// The store directory.
    public var path: String
    /// The data file's size before, in bytes.
    public var originalBytes: Int
    /// The data file's size after, in bytes.
    public var compactedBytes: Int
    /// The free fraction before (see ``StoreStatistics/freeFraction``).
    public var freeFraction: Double
}

extension StoreMaintenance {
    /// Compacts the store in `directory` in place, as `compaction: .onOpen(whenFreeFractionExceeds:)` does
    /// when a store opens: a compacted copy beside the data file, made durable, swapped in atomically.
    ///
    /// Only while no process (this one included) has the store open; a kill at any moment leaves a store
    /// that opens with every committed record. An encrypted store is compacted only with its key (`encryption`),
    /// as every other command opens it; nothing is decrypted.
    /// - Throws: ``MaintenanceError/noStore(path:)``, ``MaintenanceError/readOnly(path:)``,
    ///   ``LocalStorageError/storageError(code:message:)`` with `EBUSY` while a process has the store open,
    ///   `openFailed` for a file that is not one of our stores, for an encrypted store without its key or a
    ///   key that is not its own, or the failure of the copy (the store is then unchanged).
    public static func compactInPlace(
        directory: URL, encryption: StorageEncryption? = nil
    ) throws -> CompactInPlaceReport {
        let directory = storeDirectory(named: directory)
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path),
            !holdsEmptyDataFile(directory)
        else {
            throw MaintenanceError.noStore(path: directory.path)
        }
        if readOnlyLock(directory) != nil { throw MaintenanceError.readOnly(path: directory.path) }
        let busy = "`compact --output DIR` writes a compacted copy while the store is in use"
        try StoreInUse.check(directory, doing: "compact in place the store at", hint: busy)
        let defaults = LocalStorageConfiguration()
        func open(_ compaction: Environment.CompactionRequest?) throws -> Environment {
            try mappingErrors {
                try Environment(
                    directory: directory.path, mapSize: defaults.mapSize, maxMapSize: defaults.maxMapSize,
                    durability: .full, compaction: compaction)
            }
        }
        // Never rewrite another program's LMDB environment, nor a store this version does not read: the layout
        // checks of an open, read only, which say what the environment is.
        let plain = try open(nil)
        let problem = try mappingErrors {
            try plain.readCommitted { txn -> (reason: String, foreign: Bool)? in
                do {
                    try TypeRegistry.refuseForeignEnvironment(txn: txn)
                    guard let meta = try txn.openDatabase(TypeRegistry.metaName, create: false) else {
                        return ("not a LocalStorageKit store (it has no meta database)", true)
                    }
                    try TypeRegistry.checkLayout(meta: meta, txn: txn)
                } catch LocalStorageError.decodingFailed(let reason) {
                    return (reason, reason.hasPrefix(TypeRegistry.foreignStoreReason))
                }
                return nil
            }
        }
        // Another program's environment is left as it was found: without the lock file this open made.
        if problem?.foreign == true { plain.removeCreatedOpenLockFile() }
        plain.close()
        if let problem { throw LocalStorageError.openFailed(path: directory.path, reason: problem.reason) }
        // The layout again and the key check of an open, which reads nothing else, under the compaction's lock (a
        // store without encryption takes any key: the key is checked when an app or a command that seals opens it).
        var request = Environment.CompactionRequest(threshold: -1)
        request.entryChecks = StoreCore.compactionEntryChecks(encryption: encryption, takingAKeyWithoutACheck: true)
        let environment = try open(request)
        defer { environment.close() }
        switch environment.compactionOutcome {
        case .compacted(let fraction, let before, let after):
            return CompactInPlaceReport(
                path: directory.path, originalBytes: before, compactedBytes: after, freeFraction: fraction)
        case .notNeeded(let fraction):
            let size = try fileSize(directory.appendingPathComponent("data.mdb"))
            return CompactInPlaceReport(
                path: directory.path, originalBytes: size, compactedBytes: size, freeFraction: fraction)
        case .skipped(_, let reason):
            throw LocalStorageError.storageError(
                code: EBUSY, message: "cannot compact \(directory.path) in place: \(reason); \(busy)")
        case .refused(_, let reason):
            throw LocalStorageError.openFailed(path: directory.path, reason: reason)
        case .failed(_, let reason):
            throw LocalStorageError.storageError(
                code: EIO, message: "cannot compact \(directory.path), it is unchanged: \(reason)")
        case nil:
            throw LocalStorageError.storageError(
                code: EBUSY,
                message: "cannot compact \(directory.path) in place: another process has the store open; \(busy)")
        }
    }
}
