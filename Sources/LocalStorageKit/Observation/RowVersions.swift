import Synchronization

/// One returned row as a live query compares results: its id, the time it was last written and a digest of its
/// stored payload (a write that keeps the update time, as an import does, still changes the row: trial93 #1).
struct RowVersion: Equatable, Sendable {
    let id: [UInt8]
    let updatedAt: Int64
    let payload: UInt64
}

/// A 64-bit digest of a record's stored payload, to tell a changed value from an unchanged one where the update
/// time does not (``RowVersion``, `updates(of:id:)`). Not for security: a change that keeps the digest goes
/// unseen with a probability of about 2⁻⁶⁴. A payload resealed or migrated in place changes its digest though not
/// its value: the result is emitted again, equal.
enum PayloadDigest {
    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ UInt64(bytes.count)
        func mix(_ word: UInt64) {
            hash = (hash ^ word) &* 0xbf58_476d_1ce4_e5b9
            hash ^= hash >> 29
        }
        var offset = 0
        while offset + 8 <= bytes.count {
            mix(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        var tail: UInt64 = 0
        for (shift, byte) in bytes[offset...].enumerated() { tail |= UInt64(byte) << (8 * UInt64(shift)) }
        mix(tail)
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        return hash ^ (hash >> 31)
    }
}

/// Collects the ``RowVersion`` of every row the reads of one task decode, so that a live query tells an
/// unchanged result from a changed one by ids and record versions instead of encoding the values.
///
/// A live query sets it for the span of one run (``current`` is task-local); ``DecodeSession`` notes each
/// row it decodes. Reads of other tasks never see it.
final class RowVersions: Sendable {
    @TaskLocal static var current: RowVersions?

    private let collected = Mutex<[RowVersion]>([])

    func note(id: UnsafeRawBufferPointer, updatedAt: Int64, payload: UnsafeRawBufferPointer) {
        let version = RowVersion(id: Array(id), updatedAt: updatedAt, payload: PayloadDigest.of(payload))
        collected.withLock { $0.append(version) }
    }

    var rows: [RowVersion] { collected.withLock { $0 } }
}
