import Synchronization

/// One returned row as a live query compares results: its id and the time it was last written.
struct RowVersion: Equatable, Sendable {
    let id: [UInt8]
    let updatedAt: Int64
}

/// Collects the ``RowVersion`` of every row the reads of one task decode, so that a live query tells an
/// unchanged result from a changed one by ids and record versions instead of encoding the values.
///
/// A live query sets it for the span of one run (``current`` is task-local); ``DecodeSession`` notes each
/// row it decodes. Reads of other tasks never see it.
final class RowVersions: Sendable {
    @TaskLocal static var current: RowVersions?

    private let collected = Mutex<[RowVersion]>([])

    func note(id: UnsafeRawBufferPointer, updatedAt: Int64) {
        collected.withLock { $0.append(RowVersion(id: Array(id), updatedAt: updatedAt)) }
    }

    var rows: [RowVersion] { collected.withLock { $0 } }
}
