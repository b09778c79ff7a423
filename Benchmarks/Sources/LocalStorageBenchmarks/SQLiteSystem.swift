import CSQLite
import Foundation
import Synchronization

/// SQLite through its C API, as most Swift persistence stacks use it underneath: WAL, prepared statements,
/// a rowid table with an id primary key, the three indexed columns (one index each) and the JSON payload
/// as a blob, decoded with Foundation's `JSONDecoder`.
final class SQLiteSystem {
    private let connection: SQLiteConnection
    private let selectByID: OpaquePointer
    private let insert: OpaquePointer
    private let selectPriceRange: OpaquePointer
    private let selectPriceRangeUnordered: OpaquePointer
    private let selectCategoryByPrice: OpaquePointer
    private let countPriceRange: OpaquePointer
    private let selectPriceRangePage: OpaquePointer
    private let selectAll: OpaquePointer
    private let decoder = JSONDecoder()
    private let encoder = JSONEncoder()

    /// Opens (creating) the database at `path` with `PRAGMA synchronous` set to `synchronous`.
    init(path: String, synchronous: String = "NORMAL") throws {
        connection = try SQLiteConnection(path: path)
        try connection.execute("PRAGMA busy_timeout=10000")
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=\(synchronous)")
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS products (
                id TEXT PRIMARY KEY NOT NULL,
                category TEXT NOT NULL,
                price REAL NOT NULL,
                rating REAL NOT NULL,
                payload BLOB NOT NULL);
            CREATE INDEX IF NOT EXISTS products_category ON products(category);
            CREATE INDEX IF NOT EXISTS products_price ON products(price);
            CREATE INDEX IF NOT EXISTS products_rating ON products(rating);
            """)
        selectByID = try connection.prepare("SELECT payload FROM products WHERE id = ?1")
        insert = try connection.prepare(
            """
            INSERT OR REPLACE INTO products (id, category, price, rating, payload) VALUES (?1, ?2, ?3, ?4, ?5)
            """)
        // The rowid follows the id here (records are inserted in id order), so ties on price come out by id,
        // as LocalStorageKit orders them, without asking SQLite for a second sort key it has no index for.
        selectPriceRange = try connection.prepare(
            """
            SELECT payload FROM products WHERE price BETWEEN ?1 AND ?2 ORDER BY price LIMIT ?3
            """)
        selectPriceRangeUnordered = try connection.prepare(
            "SELECT payload FROM products WHERE price BETWEEN ?1 AND ?2 LIMIT ?3")
        // SQLite sorts this one (category index, then a sort on price), so the tie-break costs nothing.
        selectCategoryByPrice = try connection.prepare(
            """
            SELECT payload FROM products WHERE category = ?1 ORDER BY price DESC, id DESC LIMIT ?2
            """)
        countPriceRange = try connection.prepare("SELECT count(*) FROM products WHERE price BETWEEN ?1 AND ?2")
        selectPriceRangePage = try connection.prepare(
            """
            SELECT payload FROM products WHERE price BETWEEN ?1 AND ?2 ORDER BY price LIMIT ?3 OFFSET ?4
            """)
        selectAll = try connection.prepare("SELECT payload FROM products")
    }

    /// Moves the write-ahead log into the database file and empties it.
    func checkpoint() throws {
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Sets `PRAGMA synchronous` (`NORMAL`, `FULL`).
    func setSynchronous(_ mode: String) throws {
        try connection.execute("PRAGMA synchronous=\(mode)")
    }

    // MARK: - Writing

    /// Inserts every product in one transaction.
    func save(contentsOf products: [Product]) throws {
        try connection.execute("BEGIN")
        do {
            for product in products { try save(product) }
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Inserts (or replaces) one product; in its own transaction unless one is open.
    func save(_ product: Product) throws {
        let payload = try encoder.encode(product)
        defer {
            sqlite3_reset(insert)
            sqlite3_clear_bindings(insert)
        }
        try product.id.withCString { id in
            try product.category.withCString { category in
                try payload.withUnsafeBytes { bytes in
                    try connection.check(sqlite3_bind_text(insert, 1, id, -1, nil), "bind id")
                    try connection.check(sqlite3_bind_text(insert, 2, category, -1, nil), "bind category")
                    try connection.check(sqlite3_bind_double(insert, 3, product.price), "bind price")
                    try connection.check(sqlite3_bind_double(insert, 4, product.rating), "bind rating")
                    try connection.check(
                        sqlite3_bind_blob(insert, 5, bytes.baseAddress, Int32(bytes.count), nil),
                        "bind payload")
                    _ = try connection.step(insert)
                }
            }
        }
    }

    /// Inserts `products` from `writers.count` threads at once, each on its own connection, one
    /// transaction per product.
    static func saveConcurrently(_ products: [Product], writers: [SQLiteSystem]) throws {
        let failure = Mutex<String?>(nil)
        let group = DispatchGroup()
        for (index, writer) in writers.enumerated() {
            let share = Array(stride(from: index, to: products.count, by: writers.count).map { products[$0] })
            let box = WriterBox(writer: writer)
            group.enter()
            let thread = Thread {
                do {
                    for product in share { try box.writer.save(product) }
                } catch {
                    failure.withLock { $0 = $0 ?? "\(error)" }
                }
                group.leave()
            }
            thread.start()
        }
        group.wait()
        if let message = failure.withLock({ $0 }) { throw BenchmarkError(message) }
    }

    // MARK: - Reading

    /// Point get and decode of each id.
    func fetch(_ ids: ArraySlice<String>) throws -> Int {
        var checksum = Checksum()
        for id in ids {
            try id.withCString { id in
                defer { sqlite3_reset(selectByID) }
                try connection.check(sqlite3_bind_text(selectByID, 1, id, -1, nil), "bind id")
                if try connection.step(selectByID) { checksum.add(try decodePayload(selectByID)) }
            }
        }
        return checksum.value
    }

    /// The first `limit` products with a price in `range`, by price.
    func fetch(priceIn range: ClosedRange<Double>, limit: Int) throws -> Int {
        defer { sqlite3_reset(selectPriceRange) }
        try connection.check(sqlite3_bind_double(selectPriceRange, 1, range.lowerBound), "bind")
        try connection.check(sqlite3_bind_double(selectPriceRange, 2, range.upperBound), "bind")
        try connection.check(sqlite3_bind_int64(selectPriceRange, 3, Int64(limit)), "bind")
        return try decodeRows(selectPriceRange)
    }

    /// Products with a price in `range` in no particular order: with a limit, how many came back; without
    /// one, an order-free fingerprint of them all.
    func fetchUnordered(priceIn range: ClosedRange<Double>, limit: Int?) throws -> Int {
        let statement = selectPriceRangeUnordered
        defer { sqlite3_reset(statement) }
        try connection.check(sqlite3_bind_double(statement, 1, range.lowerBound), "bind")
        try connection.check(sqlite3_bind_double(statement, 2, range.upperBound), "bind")
        try connection.check(sqlite3_bind_int64(statement, 3, Int64(limit ?? -1)), "bind")
        var products: [Product] = []
        while try connection.step(statement) { products.append(try decodePayload(statement)) }
        return limit == nil ? Checksum.unordered(products) : products.count
    }

    /// The first `limit` products of `category` by descending price.
    func fetch(category: String, byDescendingPriceLimit limit: Int) throws -> Int {
        try category.withCString { category in
            defer { sqlite3_reset(selectCategoryByPrice) }
            try connection.check(sqlite3_bind_text(selectCategoryByPrice, 1, category, -1, nil), "bind")
            try connection.check(sqlite3_bind_int64(selectCategoryByPrice, 2, Int64(limit)), "bind")
            return try decodeRows(selectCategoryByPrice)
        }
    }

    /// The number of products with a price in `range`.
    func count(priceIn range: ClosedRange<Double>) throws -> Int {
        defer { sqlite3_reset(countPriceRange) }
        try connection.check(sqlite3_bind_double(countPriceRange, 1, range.lowerBound), "bind")
        try connection.check(sqlite3_bind_double(countPriceRange, 2, range.upperBound), "bind")
        guard try connection.step(countPriceRange) else { throw BenchmarkError("count returned no row") }
        return Int(sqlite3_column_int64(countPriceRange, 0))
    }

    /// Page `page` (from 1) of products with a price in `range` by price, and the total count: two
    /// statements, as a pager over SQL does it.
    func page(priceIn range: ClosedRange<Double>, page: Int, pageSize: Int) throws -> Int {
        let total = try count(priceIn: range)
        defer { sqlite3_reset(selectPriceRangePage) }
        try connection.check(sqlite3_bind_double(selectPriceRangePage, 1, range.lowerBound), "bind")
        try connection.check(sqlite3_bind_double(selectPriceRangePage, 2, range.upperBound), "bind")
        try connection.check(sqlite3_bind_int64(selectPriceRangePage, 3, Int64(pageSize)), "bind")
        try connection.check(sqlite3_bind_int64(selectPriceRangePage, 4, Int64((page - 1) * pageSize)), "bind")
        var checksum = Checksum()
        while try connection.step(selectPriceRangePage) { checksum.add(try decodePayload(selectPriceRangePage)) }
        checksum.add(total)
        return checksum.value
    }

    /// Decodes every row (in rowid order, which is id order here).
    func scan() throws -> Int {
        defer { sqlite3_reset(selectAll) }
        return try decodeRows(selectAll)
    }

    // MARK: - Decoding

    private func decodeRows(_ statement: OpaquePointer) throws -> Int {
        var checksum = Checksum()
        while try connection.step(statement) { checksum.add(try decodePayload(statement)) }
        return checksum.value
    }

    /// Decodes column 0 of the current row in place.
    private func decodePayload(_ statement: OpaquePointer) throws -> Product {
        guard let blob = sqlite3_column_blob(statement, 0) else { throw BenchmarkError("empty payload") }
        let count = Int(sqlite3_column_bytes(statement, 0))
        let payload = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: blob), count: count, deallocator: .none)
        return try decoder.decode(Product.self, from: payload)
    }
}

/// Hands one connection to the one thread that uses it.
// @unchecked: each writer is used by exactly one thread, and only after the previous user is done.
private struct WriterBox: @unchecked Sendable {
    let writer: SQLiteSystem
}
