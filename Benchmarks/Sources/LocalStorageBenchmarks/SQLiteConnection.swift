import CSQLite

/// One SQLite connection and the statements prepared on it (finalized with it).
final class SQLiteConnection {
    let handle: OpaquePointer
    private var statements: [OpaquePointer] = []

    /// Opens (creating) the database at `path` in multi-thread mode: one thread at a time per connection.
    init(path: String) throws {
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(
            path, &opened, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
            nil)
        guard code == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "code \(code)"
            sqlite3_close(opened)
            throw BenchmarkError("sqlite3_open_v2 \(path): \(message)")
        }
        handle = opened
    }

    deinit {
        for statement in statements { sqlite3_finalize(statement) }
        sqlite3_close(handle)
    }

    /// Runs SQL without results (or ignoring them), such as pragmas and DDL.
    func execute(_ sql: String) throws {
        try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
    }

    /// A persistent prepared statement, finalized with the connection.
    func prepare(_ sql: String) throws -> OpaquePointer {
        var prepared: OpaquePointer?
        try check(sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil), sql)
        guard let prepared else { throw BenchmarkError("no statement for \(sql)") }
        statements.append(prepared)
        return prepared
    }

    /// Steps `statement`: true for a row, false when done.
    func step(_ statement: OpaquePointer) throws -> Bool {
        let code = sqlite3_step(statement)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        try check(code, "sqlite3_step")
        return false
    }

    /// Throws SQLite's message unless `code` is `SQLITE_OK`.
    func check(_ code: Int32, _ context: String) throws {
        guard code == SQLITE_OK else {
            throw BenchmarkError("SQLite \(code) in \(context): \(String(cString: sqlite3_errmsg(handle)))")
        }
    }
}
