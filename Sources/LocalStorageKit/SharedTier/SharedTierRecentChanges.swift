/// The records the last few hundred changes applied to the local store touched, with their sequences: a fill
/// (a record read from the server on a local miss, with the server's sequence at the read) may be kept after
/// later changes were applied only when none of them touched that record.
struct SharedTierRecentChanges {
    /// How many changes are remembered.
    static let capacity = 1024

    private var entries: [(record: String, sequence: Int64)] = []
    /// Changes up to this sequence are forgotten (or were never known): a read older than that cannot be checked.
    private(set) var floor: Int64 = Int64.max

    /// The key of a record, or of every record of a type (`id` nil: a clear).
    static func record(type: String, id: String?) -> String {
        id.map { type + "\u{0}" + $0 } ?? type + "\u{1}"
    }

    /// Remembers that `changes` were applied at `sequence`.
    mutating func note(_ changes: [SharedTier.LocalChange], at sequence: Int64) {
        if floor == Int64.max { floor = sequence - 1 }
        for change in changes {
            let isClear = change.kind == UInt8(ascii: "C")
            entries.append((Self.record(type: change.type, id: isClear ? nil : change.id), sequence))
        }
        if entries.count > Self.capacity {
            let dropped = entries.count - Self.capacity
            floor = max(floor, entries[dropped - 1].sequence)
            entries.removeFirst(dropped)
        }
    }

    /// Forgets everything: the local store was rebuilt at `sequence`.
    mutating func forgetAll(before sequence: Int64) {
        entries = []
        floor = sequence
    }

    /// Whether the record `id` of `type` may have changed after `sequence` (by what is remembered).
    func mayHaveChanged(type: String, id: String, after sequence: Int64) -> Bool {
        if sequence < floor { return true }
        let record = Self.record(type: type, id: id)
        let clear = Self.record(type: type, id: nil)
        // Compared as bytes: ids that differ only in normalisation (NFC, NFD) are different records.
        return entries.contains {
            $0.sequence > sequence
                && ($0.record.utf8.elementsEqual(record.utf8) || $0.record.utf8.elementsEqual(clear.utf8))
        }
    }
}
