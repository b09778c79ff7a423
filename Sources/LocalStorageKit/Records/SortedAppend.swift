import CLMDB

/// Adds a run of (key, value) pairs that arrive in strictly increasing order to a sorted-duplicates
/// database. When the run's first pair sorts after the database's last pair (a first bulk load, the
/// update-time and expiry entries of a batch, whose key is the newest time), every pair goes in at
/// the end with `MDB_APPEND` (a new key) or `MDB_APPENDDUP` (the key of the pair before): LMDB then
/// skips the key search and fills pages to the end instead of splitting them in half. Otherwise each
/// pair is an ordinary insert.
///
/// The caller guarantees the order; a pair out of order makes LMDB refuse it (`MDB_KEYEXIST`, thrown),
/// it never lands in the wrong place.
///
/// Every pair goes through one cursor, opened for the run (``run(into:txn:_:)``): a pair under the key of the pair
/// before is placed without a search from the root (LMDB finds the key on the cursor's page), which a fresh cursor
/// for each put (`mdb_put`) made for every entry of an index with few distinct values.
struct SortedAppend {
    /// The database the run goes into.
    private let database: Database
    /// The run's cursor on `database`, open while ``run(into:txn:_:)`` runs the body.
    private var cursor: Cursor
    /// Whether the run goes in at the end; decided at its first pair.
    private var appending: Bool?
    /// The key of the previous pair of the run (its bytes, the buffer reused).
    private var previousKey: [UInt8] = []

    private init(_ database: Database, cursor: Cursor) {
        self.database = database
        self.cursor = cursor
    }

    /// Runs `body` with a run into `database`, its cursor open until `body` returns.
    static func run<R>(into database: Database, txn: Transaction, _ body: (inout SortedAppend) throws -> R) throws -> R
    {
        try txn.withCursor(database) { cursor in
            var run = SortedAppend(database, cursor: cursor)
            return try body(&run)
        }
    }

    /// Adds (`key`, `value`); returns whether it was added (false when the pair was there already).
    mutating func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, txn: Transaction) throws -> Bool {
        let appending: Bool
        if let decided = self.appending {
            appending = decided
        } else {
            let start = try Self.start(key: key, value: value, cursor: &cursor)
            appending = start.appending
            // The database's last key is the run's first: its first pair joins that key's duplicates.
            if start.sameKey { previousKey.append(contentsOf: key) }
            self.appending = appending
        }
        guard appending else {
            return try txn.insert(database, key: key, value: value)
        }
        let sameKey = previousKey.withUnsafeBytes { ByteOrder.compare($0, key) == 0 } && !previousKey.isEmpty
        try cursor.put(key, value, flags: UInt32(sameKey ? MDB_APPENDDUP : MDB_APPEND))
        if !sameKey {
            previousKey.removeAll(keepingCapacity: true)
            previousKey.append(contentsOf: key)
        }
        return true
    }

    /// Adds (`key`, `value`) given as arrays.
    @discardableResult
    mutating func add(key: [UInt8], value: [UInt8], txn: Transaction) throws -> Bool {
        try key.withUnsafeBytes { key in
            try value.withUnsafeBytes { value in try add(key: key, value: value, txn: txn) }
        }
    }

    /// Whether `key` sorts after every key of `database` (true when it is empty): a run of increasing keys
    /// from there can go in with `MDB_APPEND`.
    static func sortsAfterLast(_ key: [UInt8], in database: Database, txn: Transaction) throws -> Bool {
        try txn.withCursor(database) { cursor in
            guard let last = try cursor.move(MDB_LAST) else { return true }
            return key.withUnsafeBytes { ByteOrder.compare($0, last.key) > 0 }
        }
    }

    /// Whether (`key`, `value`) sorts after the last pair of the cursor's database (true when it is empty), and
    /// whether its key is that pair's key.
    private static func start(
        key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, cursor: inout Cursor
    ) throws -> (appending: Bool, sameKey: Bool) {
        guard let last = try cursor.move(MDB_LAST) else { return (true, false) }
        let order = ByteOrder.compare(key, last.key)
        if order == 0 {
            return (ByteOrder.compare(value, last.value) > 0, true)
        }
        return (order > 0, false)
    }
}
