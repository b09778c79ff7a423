import Foundation
import Synchronization

/// Why a migration chain could not run.
public enum MigrationChainError: Error, Sendable, CustomStringConvertible {
    /// No step starts at `from` on the way to `to`.
    case missingStep(from: Int, to: Int)
    /// The only steps that start at `from` go to `past`, beyond the current version `to`.
    case stepPastCurrent(from: Int, past: Int, to: Int)
    /// The migrated payload's id is `migrated`, not the record's `stored`: a record is kept under its id, so a
    /// migration may not change it.
    case changedID(stored: String, migrated: String)

    /// A sentence saying what is wrong with the chain.
    public var description: String {
        switch self {
        case .missingStep(let from, let to): "no migration step from version \(from) on the way to \(to)"
        case .stepPastCurrent(let from, let past, let to):
            "the migration step from version \(from) goes to \(past), past the current version \(to)"
        case .changedID(let stored, let migrated):
            "the migrated payload's id is \"\(migrated)\", not the record's \"\(stored)\" (a migration may not change the id)"
        }
    }
}
