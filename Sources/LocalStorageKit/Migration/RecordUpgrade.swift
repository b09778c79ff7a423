import Foundation
import Synchronization

/// A record migrated in memory by a read, to store at its new version.
struct RecordUpgrade: Sendable {
    let key: [UInt8]
    let fromVersion: Int
    let updatedAt: Int64
    let payload: [UInt8]
    let format: PayloadFormat
    let version: Int
    let indexValues: [StoredIndexValue]
}
