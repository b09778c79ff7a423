/// When a store gives its free pages back to the disk (``LocalStorageConfiguration/compaction``).
///
/// An LMDB file never shrinks by itself: pages freed by deletes are reused, never returned. With
/// ``onOpen(whenFreeFractionExceeds:)`` the store, when it opens, measures its free fraction (free pages
/// over all pages of the data file); when that exceeds the threshold and no other process has the store
/// open, it copies itself without its free pages beside the original (`data.mdb.compacting`, with the
/// store's file mode), `fsync`s the copy, renames it over `data.mdb` and opens it. A process killed at any
/// moment leaves a store that opens with every committed record; a copy left behind is removed at the
/// next open.
///
/// Other processes are seen through a lock every opener holds shared on `compaction.lock` in the store's
/// folder, LMDB's reader table and LMDB's own lock on `lock.mdb`: while any process has the store open, it
/// opens as it is and compacts at a later open. A compaction that fails leaves the store unchanged and
/// is logged as a warning. `localstorage stats` shows the free fraction; `localstorage compact` compacts on
/// demand.
///
/// ```swift
/// config.compaction = .onOpen(whenFreeFractionExceeds: 0.5)  // more than half the file is free pages
/// ```
public struct StorageCompaction: Sendable, Equatable, CustomStringConvertible {
    /// The free fraction of the data file above which an open compacts; nil never.
    let freeFraction: Double?

    /// Never compacts on its own (the default); `localstorage compact` still does on demand.
    public static let never = StorageCompaction(freeFraction: nil)

    /// Compacts when the store opens, no other process has it open, and more than `fraction` (0…1, clamped;
    /// a non-finite value never compacts) of its data file is free pages. `0` compacts a file with any free
    /// page at each open alone.
    public static func onOpen(whenFreeFractionExceeds fraction: Double) -> StorageCompaction {
        StorageCompaction(freeFraction: fraction.isFinite ? min(max(fraction, 0), 1) : nil)
    }

    /// `never`, or `onOpen(whenFreeFractionExceeds:)` with its fraction.
    public var description: String {
        freeFraction.map { "onOpen(whenFreeFractionExceeds: \($0))" } ?? "never"
    }
}
