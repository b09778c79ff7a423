import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A borrowed view of an open LMDB transaction, valid only inside the closure that received it.
///
/// Read and write transactions share this type; only the writer thread ever holds one that can
/// write. Values returned by ``get(_:key:)`` point into the memory map and must not outlive the
/// closure either.
struct Transaction {
    let handle: OpaquePointer
    let isReadOnly: Bool

    /// The transaction's id: for a read transaction, the id of the commit its snapshot shows.
    var id: Int { Int(mdb_txn_id(handle)) }

    /// The value stored under `key`, pointing into the map, or nil when absent.
    func get(_ database: Database, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let code = mdb_get(handle, database.handle, &k, &v)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_get")
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    /// The value stored under `key` (bytes given as an array), pointing into the map.
    func get(_ database: Database, key: [UInt8]) throws -> UnsafeRawBufferPointer? {
        try key.withUnsafeBytes { try get(database, key: $0) }
    }

    /// Stores `value` under `key`, replacing (or, in a sorted-duplicates database, adding) it.
    func put(
        _ database: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
        flags: UInt32 = 0
    ) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let code = mdb_put(handle, database.handle, &k, &v, flags)
        if code == MDB_KEYEXIST && flags & UInt32(MDB_NODUPDATA) != 0 { return }
        try check(code, "mdb_put")
    }

    /// Adds the pair (`key`, `value`) to a sorted-duplicates database unless it is there already
    /// (`MDB_NODUPDATA`). Returns whether it was added.
    func insert(_ database: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let code = mdb_put(handle, database.handle, &k, &v, UInt32(MDB_NODUPDATA))
        if code == MDB_KEYEXIST { return false }
        try check(code, "mdb_put")
        return true
    }

    /// Whether a sorted-duplicates database holds the pair (`key`, `value`). A read: unlike an insert that finds
    /// the pair, it changes no page.
    func contains(_ database: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> Bool {
        try withCursor(database) { cursor in
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            let code = mdb_cursor_get(cursor.handle, &k, &v, MDB_GET_BOTH)
            if code == MDB_NOTFOUND { return false }
            try check(code, "mdb_cursor_get")
            return true
        }
    }

    /// Deletes `key` (every duplicate of it); raw-bytes form. Returns false when it was absent.
    @discardableResult
    func delete(_ database: Database, key: UnsafeRawBufferPointer) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let code = mdb_del(handle, database.handle, &k, nil)
        if code == MDB_NOTFOUND { return false }
        try check(code, "mdb_del")
        return true
    }

    /// Stores `length` bytes under `key` that `fill` writes straight into the map (`MDB_RESERVE`): no
    /// intermediate buffer holds the whole value. Not for sorted-duplicates databases. With `appending`
    /// (`MDB_APPEND`), the key must sort after every key of the database (LMDB refuses it otherwise).
    func putReserved(
        _ database: Database, key: [UInt8], length: Int, appending: Bool = false,
        fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws {
        try key.withUnsafeBytes { kb in
            var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
            var v = MDB_val(mv_size: length, mv_data: nil)
            let flags = UInt32(MDB_RESERVE) | (appending ? UInt32(MDB_APPEND) : 0)
            try check(mdb_put(handle, database.handle, &k, &v, flags), "mdb_put")
            guard let start = v.mv_data else { throw LMDBError(code: EINVAL, call: "mdb_put", caller: #function) }
            fill(UnsafeMutableRawBufferPointer(start: start, count: length))
        }
    }

    // MARK: - Nested transactions (writer thread only)

    /// Begins a transaction nested in this write transaction: its writes are seen by the parent only if
    /// it commits. This transaction must not be used until the child commits or aborts.
    func beginNested() throws -> Transaction {
        var raw: OpaquePointer?
        try check(mdb_txn_begin(mdb_txn_env(handle), handle, 0, &raw), "mdb_txn_begin")
        guard let raw else { throw LMDBError(code: EINVAL, call: "mdb_txn_begin", caller: #function) }
        return Transaction(handle: raw, isReadOnly: false)
    }

    /// Commits a nested transaction into its parent.
    func commitNested() throws {
        try check(mdb_txn_commit(handle), "mdb_txn_commit")
    }

    /// Aborts a nested transaction: nothing it wrote reaches its parent.
    func abortNested() {
        mdb_txn_abort(handle)
    }

    /// Stores `value` under `key`; array convenience.
    func put(_ database: Database, key: [UInt8], value: [UInt8], flags: UInt32 = 0) throws {
        try key.withUnsafeBytes { k in
            try value.withUnsafeBytes { v in try put(database, key: k, value: v, flags: flags) }
        }
    }

    /// Deletes `key` (and, when `value` is given in a sorted-duplicates database, only that pair).
    /// Returns false when there was nothing to delete.
    @discardableResult
    func delete(_ database: Database, key: [UInt8], value: [UInt8]? = nil) throws -> Bool {
        var code: Int32 = 0
        key.withUnsafeBytes { kb in
            var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
            if let value {
                value.withUnsafeBytes { vb in
                    var v = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                    code = mdb_del(handle, database.handle, &k, &v)
                }
            } else {
                code = mdb_del(handle, database.handle, &k, nil)
            }
        }
        if code == MDB_NOTFOUND { return false }
        try check(code, "mdb_del")
        return true
    }

    /// Removes every entry of a database, keeping the database itself.
    func empty(_ database: Database) throws {
        try check(mdb_drop(handle, database.handle, 0), "mdb_drop")
    }

    /// Removes a database and its name from the environment.
    func drop(_ database: Database) throws {
        try check(mdb_drop(handle, database.handle, 1), "mdb_drop")
    }

    /// The number of entries in a database (duplicates counted), in O(1), as the file claims it (see
    /// ``DatabaseStatistics/plausible(_:)``).
    func entryCount(_ database: Database) throws -> Int {
        var stat = MDB_stat()
        try check(mdb_stat(handle, database.handle, &stat), "mdb_stat")
        return DatabaseStatistics.plausible(stat.ms_entries)
    }

    /// Page statistics of a database.
    func statistics(_ database: Database) throws -> DatabaseStatistics {
        var stat = MDB_stat()
        try check(mdb_stat(handle, database.handle, &stat), "mdb_stat")
        return DatabaseStatistics(stat)
    }

    /// Opens a cursor on `database` for the duration of `body`.
    func withCursor<R>(_ database: Database, _ body: (inout Cursor) throws -> R) throws -> R {
        var raw: OpaquePointer?
        try check(mdb_cursor_open(handle, database.handle, &raw), "mdb_cursor_open")
        guard let raw else { throw LMDBError(code: EINVAL, call: "mdb_cursor_open", caller: #function) }
        defer { mdb_cursor_close(raw) }
        var cursor = Cursor(handle: raw)
        return try body(&cursor)
    }

    /// Opens (and with `create`, creates) a named database in this transaction.
    /// Returns nil when the database does not exist and `create` is false.
    func openDatabase(_ name: String, sortedDuplicates: Bool = false, create: Bool) throws -> Database? {
        var dbi: MDB_dbi = 0
        let openFlags = UInt32((sortedDuplicates ? MDB_DUPSORT : 0) | (create ? MDB_CREATE : 0))
        let code = name.withCString { mdb_dbi_open(handle, $0, openFlags, &dbi) }
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_dbi_open")
        return Database(handle: dbi)
    }
}
