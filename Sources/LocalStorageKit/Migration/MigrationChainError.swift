import Foundation
import Synchronization

/// Why a migration chain could not run.
public enum MigrationChainError: Error, Sendable, CustomStringConvertible {
    /// No step starts at `from` on the way to `to`.
    case missingStep(from: Int, to: Int)

    /// A sentence saying which step is missing.
    public var description: String {
        switch self {
        case .missingStep(let from, let to): "no migration step from version \(from) on the way to \(to)"
        }
    }
}
