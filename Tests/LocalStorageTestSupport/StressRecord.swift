import LocalStorageKit

/// The record the `LocalStorageStress` helper writes and the reliability tests read back.
public struct StressRecord: LocalStorageIndexed, Equatable {
    public let id: String
    public var group: String?
    public var sequence: Int
    public var blob: String

    public init(id: String, group: String?, sequence: Int, blob: String) {
        self.id = id
        self.group = group
        self.sequence = sequence
        self.blob = blob
    }

    public static var storageIndexes: [StorageIndex<StressRecord>] {
        [StorageIndex("group", \.group), StorageIndex("sequence", \.sequence)]
    }

    /// The record number `sequence` of a save loop: every fifth has no group, blobs of varied length.
    public static func make(id: String, sequence: Int) -> StressRecord {
        StressRecord(
            id: id, group: sequence % 5 == 4 ? nil : "g\(sequence % 4)", sequence: sequence,
            blob: String(repeating: "x", count: 40 + (sequence * 37) % 400))
    }
}
