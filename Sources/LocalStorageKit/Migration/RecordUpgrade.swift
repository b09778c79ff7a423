import Foundation
import Synchronization

/// A record migrated in memory by a read, to store at its new version, or opened with a previous key, to
/// store sealed with the current one.
struct RecordUpgrade: Sendable {
    let key: [UInt8]
    let fromVersion: Int
    let updatedAt: Int64
    let payload: [UInt8]
    let format: PayloadFormat
    let version: Int
    /// The migrated value's index values under the current declaration; nil for a reseal, which changes the
    /// seal alone: the record keeps its declaration, index values and entries (were it moved to the current
    /// declaration with its old values, the re-index of stale records would never find it).
    let indexValues: [StoredIndexValue]?
}
