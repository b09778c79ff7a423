// Stand-ins for the few library symbols the fuzzed sources refer to but do not need, so that
// scripts/fuzz.sh can compile those sources alone (without LMDB).

/// The internal LMDB error, as `LocalStorageError.wrapping` sees it.
struct LMDBError: Error, CustomStringConvertible {
    let code: Int32
    var isMapFull: Bool { false }
    var description: String { "LMDB error \(code)" }
}
