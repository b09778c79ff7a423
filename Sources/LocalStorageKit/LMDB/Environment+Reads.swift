import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Read transactions: from the pool (renewed, reset after), beside one the thread is in, or committed to keep
/// the database handles they opened.
extension Environment {
    /// Runs `body` in a read transaction taken from the pool; the transaction ends when it returns.
    ///
    /// Nothing `body` reads from the map may escape it.
    func read<R>(_ body: (Transaction) throws -> R) throws -> R {
        try checkProcess()
        while true {
            // Plain control flow, no generic result enum: that cost a metadata lookup per read.
            gate.lockShared()
            let txn: OpaquePointer
            do {
                txn = try takeReadTransaction()
            } catch let error as LMDBError where error.isMapResized {
                gate.unlockShared()
                try adoptMapSize()
                continue
            } catch {
                gate.unlockShared()
                throw error
            }
            defer {
                returnReadTransaction(txn)
                gate.unlockShared()
            }
            return try body(Transaction(handle: txn, isReadOnly: true))
        }
    }

    /// Runs `body` in a read transaction of its own, also when this thread is inside another transaction of the
    /// store (a decode that must read `meta`): then the transaction is begun without taking the resize gate
    /// again (this thread's hold keeps a resize out; see ``ResizeGate/isHeldByThisThread``).
    func readBeside<R>(_ body: (Transaction) throws -> R) throws -> R {
        guard ResizeGate.isHeldByThisThread else { return try read(body) }
        let txn = try takeReadTransaction()
        defer { returnReadTransaction(txn) }
        return try body(Transaction(handle: txn, isReadOnly: true))
    }

    private func takeReadTransaction() throws -> OpaquePointer {
        if let pooled = readPool.withLock({ $0.take() })?.handle {
            let code = mdb_txn_renew(pooled)
            if code == MDB_SUCCESS { return pooled }
            mdb_txn_abort(pooled)
            try check(code, "mdb_txn_renew")
        }
        var txn: OpaquePointer?
        var code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
        if code == MDB_READERS_FULL {
            clearStaleReaders()
            code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
        }
        try check(code, "mdb_txn_begin")
        guard let txn else { throw LMDBError(code: EINVAL, call: "mdb_txn_begin", caller: #function) }
        return txn
    }

    private func returnReadTransaction(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        var surplus: [ReadHandle] = []
        readPool.withLock { $0.put(ReadHandle(handle: txn), surplus: &surplus) }
        for handle in surplus { mdb_txn_abort(handle.handle) }
    }

    /// Gives back the pooled read transactions (and their reader slots) that no read needed since the last time;
    /// nothing once the environment is closed or in a child after `fork()` (see ``close()``). Called from a timer,
    /// beside a close on the writer thread: the aborts run under the lock ``close()`` sets `isClosed` with.
    func giveBackIdleReads() {
        guard ForkWatch.generation == openedForkGeneration else { return }
        gate.withShared {
            isClosed.withLock { closed in
                guard !closed else { return }
                var surplus: [ReadHandle] = []
                readPool.withLock { $0.trimIdle(surplus: &surplus) }
                for handle in surplus { mdb_txn_abort(handle.handle) }
            }
        }
    }

    /// Runs `body` in a fresh read transaction that is committed, so the database handles it opened stay
    /// valid for every transaction afterwards (aborted when `body` throws). Returns nil without running `body`
    /// while another transaction of this process may be opening handles (a write transaction, or another call of
    /// this method, is under way), or when the reader table has no free slot (a write transaction needs none):
    /// the caller then does its work in a write transaction. A map another process grew is adopted first.
    ///
    /// How a type already described in `meta` is registered at its first use without a hop to the writer
    /// thread, and how an open that writes nothing reads the store's state.
    func readOpeningHandles<R>(_ body: (Transaction) throws -> R?) throws -> R? {
        try checkProcess()
        while true {
            var resized = false
            let waits = !ResizeGate.isHeldByThisThread
            let result = try handleOpening.withLockIfAvailable(waitingForReads: waits) { () throws -> R? in
                try gate.withShared { () throws -> R? in
                    var raw: OpaquePointer?
                    var code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &raw)
                    if code == MDB_READERS_FULL {
                        clearStaleReaders()
                        code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &raw)
                    }
                    if code == MDB_READERS_FULL { return nil }
                    if code == MDB_MAP_RESIZED {
                        resized = true
                        return nil
                    }
                    try check(code, "mdb_txn_begin")
                    guard let txn = raw else {
                        throw LMDBError(code: EINVAL, call: "mdb_txn_begin", caller: #function)
                    }
                    return try commit(txn, readOnly: true, running: body)
                }
            }
            // Adopted outside the handle lock and the gate, which a resize takes alone.
            guard resized else { return result }
            try adoptMapSize()
        }
    }
}
