/// When a store gives its free pages back to the disk (``LocalStorageConfiguration/compaction``).
///
/// An LMDB file never shrinks by itself: pages freed by deletes are reused, never returned. With
/// ``onOpen(whenFreeFractionExceeds:)`` the store, when it opens and no other process has it open, copies
/// itself without its free pages beside the original, makes the copy durable, and swaps it in atomically.
/// A process killed at any moment leaves a store that opens with every committed record.
///
/// This version accepts the setting but does not compact on open yet: `localstorage compact --output DIR`
/// writes a compacted copy on demand.
public struct StorageCompaction: Sendable, Equatable, CustomStringConvertible {
    /// The free fraction of the data file above which an open compacts; nil never.
    let freeFraction: Double?

    /// Never compacts on its own (the default); `localstorage compact` still does on demand.
    public static let never = StorageCompaction(freeFraction: nil)

    /// Compacts when the store opens, no other process has it open, and more than `fraction` (0…1) of its
    /// data file is free pages.
    public static func onOpen(whenFreeFractionExceeds fraction: Double) -> StorageCompaction {
        StorageCompaction(freeFraction: fraction.isFinite ? min(max(fraction, 0), 1) : nil)
    }

    /// `never`, or `onOpen(whenFreeFractionExceeds:)` with its fraction.
    public var description: String {
        freeFraction.map { "onOpen(whenFreeFractionExceeds: \($0))" } ?? "never"
    }
}
