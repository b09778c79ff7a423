/// What ``StoreMaintenance`` throws besides ``LocalStorageError``.
@_spi(Maintenance) public enum MaintenanceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The directory holds no store (no `data.mdb`).
    case noStore(path: String)
    /// The store has no type of this name; `known` lists the types it has.
    case unknownType(String, known: [String])
    /// The type declares no index of this name; `known` lists its indexes.
    case unknownIndex(String, type: String, known: [String])
    /// The type has no record with this id.
    case recordNotFound(type: String, id: String)
    /// A value or argument cannot be used as given.
    case invalidArgument(String)
    /// An output location already holds a store or file that must not be overwritten.
    case outputExists(path: String)
    /// A line of an import file cannot be imported.
    case invalidImportLine(Int, reason: String)
    /// The store was opened read-only (this process cannot write its files), and the command writes.
    case readOnly(path: String)
    /// An import would have written fewer records than its input holds (nothing of it was written).
    case incompleteImport(read: Int, written: Int)
    /// `count` records of `type` were indexed under another declaration without `index`: they have no entry
    /// there until the app re-indexes them (its first indexed query of the type does), so a listing by that
    /// index would leave them out.
    case notReindexed(type: String, index: String, count: Int)

    /// The problem in one line.
    public var description: String {
        switch self {
        case .noStore(let path):
            StoreMaintenance.isFile(path)
                ? "\(path) is a file, not a store's directory (give the directory that holds data.mdb, or the "
                    + "one an app sets as databaseDirectory)"
                : "no store at \(path) (no data.mdb there, nor in its LocalStorage directory, or an empty one)"
        case .unknownType(let name, let known):
            "the store has no type \"\(name)\"" + (known.isEmpty ? "" : " (it has: \(known.joined(separator: ", ")))")
        case .unknownIndex(let name, let type, let known):
            "\(type) has no index \"\(name)\""
                + (known.isEmpty ? " (it has none)" : " (it has: \(known.joined(separator: ", ")))")
        case .recordNotFound(let type, let id):
            "\(type) has no record \"\(id)\""
        case .invalidArgument(let reason):
            reason
        case .outputExists(let path):
            "\(path) already exists; choose another output"
        case .invalidImportLine(let line, let reason):
            "line \(line): \(reason)"
        case .readOnly(let path):
            "the store at \(path) is read-only for this user; only reading commands work on it"
        case .incompleteImport(let read, let written):
            "the import read \(read) records but would have written \(written); nothing was imported"
        case .notReindexed(let type, let index, let count):
            "\(count) record\(count == 1 ? "" : "s") of \(type) \(count == 1 ? "was" : "were") indexed under a "
                + "declaration without index \"\(index)\", or imported or copied from a shared tier and not "
                + "re-indexed yet, so \(count == 1 ? "it is" : "they are") not known to be in it (an app whose "
                + "declaration has that index re-indexes them at its first indexed query of \(type)); list without "
                + "--where and --order to see every record"
        }
    }
}
