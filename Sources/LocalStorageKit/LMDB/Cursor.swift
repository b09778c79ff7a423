import CLMDB

/// A cursor over one database, valid only inside ``Transaction/withCursor(_:_:)``.
///
/// Keys and values it returns point into the memory map.
struct Cursor {
    /// One key/value pair under the cursor.
    typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    let handle: OpaquePointer

    /// Moves the cursor (`MDB_FIRST`, `MDB_NEXT`, `MDB_PREV`, …) and returns the pair, or nil past the end.
    @inline(__always)
    mutating func move(_ op: MDB_cursor_op) throws -> Entry? {
        var k = MDB_val()
        var v = MDB_val()
        let code = mdb_cursor_get(handle, &k, &v, op)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_cursor_get")
        return (
            UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
            UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
        )
    }

    /// Moves the cursor and returns the pair, or nil past the end.
    @inline(__always)
    mutating func move(_ move: CursorMove) throws -> Entry? { try self.move(move.operation) }

    /// Positions at the first key ≥ `key` (`MDB_SET_RANGE`).
    mutating func seek(atLeast key: [UInt8]) throws -> Entry? {
        if key.isEmpty { return try move(MDB_FIRST) }
        var k = MDB_val()
        var v = MDB_val()
        var code: Int32 = 0
        key.withUnsafeBytes { kb in
            k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
            code = mdb_cursor_get(handle, &k, &v, MDB_SET_RANGE)
        }
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_cursor_get")
        return (
            UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
            UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
        )
    }

    /// Positions at the first pair ≥ (`key`, `value`) in a sorted-duplicates database.
    mutating func seek(atLeast key: [UInt8], value: [UInt8]) throws -> Entry? {
        guard let entry = try seek(atLeast: key) else { return nil }
        guard entry.key.elementsEqual(key) else { return entry }
        var k = MDB_val()
        var v = MDB_val()
        var code: Int32 = 0
        key.withUnsafeBytes { kb in
            value.withUnsafeBytes { vb in
                k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
                v = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                code = mdb_cursor_get(handle, &k, &v, MDB_GET_BOTH_RANGE)
            }
        }
        if code == MDB_NOTFOUND {
            // Every duplicate of `key` is below `value`: continue at the next key.
            guard try seek(atLeast: key) != nil else { return nil }
            return try move(MDB_NEXT_NODUP)
        }
        try check(code, "mdb_cursor_get")
        return (
            UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
            UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
        )
    }

    /// The number of duplicates under the current key of a sorted-duplicates database.
    func duplicateCount() throws -> Int {
        var count: Int = 0
        try check(mdb_cursor_count(handle, &count), "mdb_cursor_count")
        return count
    }

    /// Positions at `key` itself (`MDB_SET_KEY`) and returns its value, or nil when there is no such key.
    mutating func find(_ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let code = mdb_cursor_get(handle, &k, &v, MDB_SET_KEY)
        if code == MDB_NOTFOUND { return nil }
        try check(code, "mdb_cursor_get")
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    /// Puts `value` under `key`; with `MDB_CURRENT`, `key` must be the cursor's and the value replaces its own
    /// in place, without the search a put makes.
    mutating func put(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, flags: UInt32 = 0) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_cursor_put(handle, &k, &v, flags), "mdb_cursor_put")
    }

    /// Puts `value` under `key` when the database has no such key (`MDB_NOOVERWRITE`) and returns nil; otherwise
    /// leaves it, positions the cursor there and returns its value. One search either way.
    mutating func insert(
        _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer
    ) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let code = mdb_cursor_put(handle, &k, &v, UInt32(MDB_NOOVERWRITE))
        guard code == MDB_KEYEXIST else {
            try check(code, "mdb_cursor_put")
            return nil
        }
        // LMDB documents the existing value in `data` for `mdb_put` and does the same for a cursor (which it leaves
        // on the pair); should a build not, the pair under the cursor is read instead of taking ours for it.
        if v.mv_data == UnsafeMutableRawPointer(mutating: value.baseAddress) {
            try check(mdb_cursor_get(handle, &k, &v, MDB_GET_CURRENT), "mdb_cursor_get")
        }
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    /// Deletes the pair under the cursor.
    mutating func deleteCurrent() throws {
        try check(mdb_cursor_del(handle, 0), "mdb_cursor_del")
    }
}
