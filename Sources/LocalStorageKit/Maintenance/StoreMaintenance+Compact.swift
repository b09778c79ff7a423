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
    /// Writes a compacted copy of the store (free pages left out, pages renumbered) as the store of a
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
        guard !fileManager.fileExists(atPath: outputFile.path) else {
            throw MaintenanceError.outputExists(path: outputFile.path)
        }
        // The copy keeps whom the store's data file is shared with; its owner (the user running compact) may
        // always read and write it, even when the store itself is read-only.
        let fileMode = (StoreFileModes.mode(of: directory.appendingPathComponent("data.mdb").path) ?? 0o600) | 0o600
        let folderMode = StoreFileModes.folderMode(for: fileMode)
        if let problem = StoreFileModes.makeFolder(output.path, mode: folderMode) {
            throw MaintenanceError.invalidArgument(problem)
        }
        progress?(MaintenanceProgress(task: "compact", completed: 0, total: nil))
        try StoreMaintenance.mappingErrors { try environment.copyCompacted(to: output.path) }
        if let problem = StoreFileModes.setMode(outputFile.path, fileMode) {
            throw MaintenanceError.invalidArgument(problem)
        }
        progress?(MaintenanceProgress(task: "compact", completed: 1, total: 1))
        let copy = try await StoreMaintenance(directory: output, encryption: encryption)
        return CompactReport(
            output: output.path,
            originalBytes: try Self.fileSize(directory.appendingPathComponent("data.mdb")),
            compactedBytes: try Self.fileSize(outputFile), verify: try copy.verify(progress: progress))
    }

    /// The size of a file in bytes.
    ///
    /// - Throws: ``LocalStorageError`` when the file system cannot say (the report would otherwise show 0).
    private static func fileSize(_ url: URL) throws -> Int {
        let attributes = try mappingErrors { try FileManager.default.attributesOfItem(atPath: url.path) }
        return (attributes[.size] as? NSNumber)?.intValue ?? 0
    }
}
