import CLMDB
import Foundation
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

/// The reset read transactions an environment keeps for its next reads (renewing one costs less than beginning
/// one), newest last.
///
/// Each keeps its slot in the reader table, which every process on the store shares (512 slots), so the pool is
/// small and gives back what goes unused (review-105 F10: with 32 kept for good, 16 processes that had each once
/// read 32 at a time held every slot, and a 17th could read nothing): it keeps at most ``capacity``, and every
/// ``trimInterval`` returns, and at every expiry sweep (``trimIdle(surplus:)``, for a process that stopped reading),
/// it gives up the handles that no read of that while needed (the fewest it held idle).
struct ReadPool {
    /// At most this many are kept: the processors, from 4 to 16.
    static let capacity = max(4, min(16, ProcessInfo.processInfo.activeProcessorCount))
    /// How many returns make one while for trimming.
    static let trimInterval = 256

    private var handles: [ReadHandle] = []
    private var returns = 0
    /// The fewest handles idle in the pool since the last trim.
    private var lowWater = 0

    /// The number of handles kept.
    var count: Int { handles.count }

    /// Takes the newest handle, or nil when none is kept.
    mutating func take() -> ReadHandle? {
        guard let handle = handles.popLast() else {
            lowWater = 0
            return nil
        }
        lowWater = min(lowWater, handles.count)
        return handle
    }

    /// Keeps `handle` if there is room, and adds to `surplus` what the caller must abort: `handle` when the pool
    /// is full, and at the end of a while the oldest handles no read of it needed.
    mutating func put(_ handle: ReadHandle, surplus: inout [ReadHandle]) {
        if handles.count < Self.capacity {
            handles.append(handle)
        } else {
            surplus.append(handle)
        }
        returns += 1
        if returns >= Self.trimInterval { trimIdle(surplus: &surplus) }
    }

    /// Adds to `surplus` the oldest handles that no read needed since the last trim, and starts a new while.
    mutating func trimIdle(surplus: inout [ReadHandle]) {
        let idle = min(lowWater, handles.count)
        if idle > 0 {
            surplus.append(contentsOf: handles[..<idle])
            handles.removeFirst(idle)
        }
        returns = 0
        lowWater = handles.count
    }

    /// Removes and returns every handle kept.
    mutating func removeAll() -> [ReadHandle] {
        defer { handles = [] }
        return handles
    }
}
