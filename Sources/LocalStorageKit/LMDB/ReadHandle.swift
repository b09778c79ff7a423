import CLMDB
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A reset read transaction waiting in the pool.
struct ReadHandle: @unchecked Sendable {
    // @unchecked: a reset transaction belongs to no thread (MDB_NOTLS); only one taker pops it.
    let handle: OpaquePointer
}
