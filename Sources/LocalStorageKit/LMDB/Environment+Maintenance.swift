import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Environment-wide figures for the maintenance tool: pages, readers, the free list.
extension Environment {
    /// Page statistics of the environment's main database (`mdb_env_stat`): page size and tree shape. It reads
    /// the meta pages in the map, so it runs under the gate, as ``info()`` does: a resize of this process must
    /// not unmap them meanwhile (a thread already inside a transaction holds the gate).
    func mainStatistics() throws -> DatabaseStatistics {
        var stat = MDB_stat()
        let code =
            ResizeGate.isHeldByThisThread
            ? mdb_env_stat(handle, &stat) : gate.withShared { mdb_env_stat(handle, &stat) }
        try check(code, "mdb_env_stat")
        return DatabaseStatistics(stat)
    }

    /// Runs `body` in a fresh read transaction that is committed, not reset, so the database handles it
    /// opens stay valid afterwards: how a read-only store (which has no writer) opens its databases.
    func readCommitted<R>(_ body: (Transaction) throws -> R) throws -> R {
        var raw: OpaquePointer?
        try check(mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &raw), "mdb_txn_begin")
        guard let txn = raw else { throw LMDBError(code: EINVAL, call: "mdb_txn_begin", caller: #function) }
        return try commit(txn, readOnly: true, running: body)
    }

    /// The number of reader-table slots held by some process (`mdb_reader_list`), whether or not
    /// the slot's transaction is active right now.
    func readersInUse() throws -> Int {
        var lines = 0
        let code = withUnsafeMutablePointer(to: &lines) { counter in
            mdb_reader_list(
                handle,
                { message, context in
                    // A header line, then one line per slot; "(no active readers)" when there are none.
                    guard let message, let context else { return 0 }
                    let text = String(cString: message)
                    if !text.hasPrefix("("), !text.contains("pid") {
                        context.assumingMemoryBound(to: Int.self).pointee += 1
                    }
                    return 0
                }, counter)
        }
        try check(code, "mdb_reader_list")
        return lines
    }
}

extension Transaction {
    /// The number of pages on LMDB's free list as this transaction sees it.
    ///
    /// Walks the free-list database (dbi 0): each value is a page-number list whose first word
    /// holds its length. Complexity: O(free-list entries).
    func freePageCount() throws -> Int {
        try withCursor(.freePages) { cursor in
            var pages = 0
            var entry = try cursor.move(MDB_FIRST)
            while let current = entry {
                if current.value.count >= MemoryLayout<Int>.size {
                    pages += current.value.loadUnaligned(as: Int.self)
                }
                entry = try cursor.move(MDB_NEXT)
            }
            return pages
        }
    }
}

extension Transaction {
    /// The number of pages transaction `id` freed, from its entry in the free-list database (0 when it has
    /// none). O(log n).
    func pagesFreed(byTransaction id: Int) throws -> Int {
        try withCursor(.freePages) { cursor in
            // The free-list database's keys are transaction ids in the machine's own `size_t`.
            guard let pages = try withUnsafeBytes(of: id, { try cursor.find($0) }),
                pages.count >= MemoryLayout<Int>.size
            else { return 0 }
            return pages.loadUnaligned(as: Int.self)
        }
    }
}

extension Environment {
    /// The device and inode of the open data file (`mdb_env_get_fd`, `fstat`), or nil.
    var dataFileIdentity: (device: UInt64, inode: UInt64)? {
        var descriptor: Int32 = -1
        guard mdb_env_get_fd(handle, &descriptor) == MDB_SUCCESS, descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }
}
