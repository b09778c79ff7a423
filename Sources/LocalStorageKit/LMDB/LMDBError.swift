import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed LMDB call: LMDB's return code, its message, and the C function that failed.
///
/// This type stays internal; ``LocalStorageError`` is what users see. Every `mdb_*` call goes through
/// ``check(_:_:caller:)`` so that the failing call is always named.
struct LMDBError: Error, CustomStringConvertible, Equatable {
    /// LMDB's return code (`MDB_MAP_FULL`, `MDB_NOTFOUND`, an `errno`, …).
    let code: Int32
    /// The C function that returned ``code``.
    let call: String
    /// The Swift function that made the call.
    let caller: String

    /// LMDB's own text for ``code`` (`mdb_strerror`).
    var message: String { String(cString: mdb_strerror(code)) }

    var description: String { "\(call) failed in \(caller): \(message) (\(code))" }

    var isMapFull: Bool { code == MDB_MAP_FULL }
    var isMapResized: Bool { code == MDB_MAP_RESIZED }
    /// The file system holding the store has no room left (`ENOSPC`, `EDQUOT`; an `EIO` from a short write
    /// on a full disk is turned into `ENOSPC` by the environment).
    var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
}

/// Turns an LMDB return code into a thrown ``LMDBError`` naming the failing call.
///
/// - Parameters:
///   - code: The value an `mdb_*` function returned.
///   - call: The name of that function, e.g. `"mdb_put"`.
///   - caller: Filled in by the compiler with the Swift function making the call.
@inline(__always)
func check(_ code: Int32, _ call: StaticString, caller: StaticString = #function) throws(LMDBError) {
    if code != MDB_SUCCESS {
        throw LMDBError(code: code, call: "\(call)", caller: "\(caller)")
    }
}
