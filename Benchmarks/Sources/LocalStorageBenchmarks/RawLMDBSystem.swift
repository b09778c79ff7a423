import CLMDB
import Foundation

/// LMDB through its C API with the layout of LocalStorageKit's design and nothing more: the limit of
/// that design.
///
/// One environment (`MDB_NOTLS`, one pooled read transaction renewed per operation). A records database
/// keyed by id whose values are a small header (expiry and the index values) followed by the JSON
/// payload; one database per index keyed by `ordered value ‖ id`, whose values are the record's expiry
/// (8 bytes, 0 = never), so that counts and range walks never touch the records.
final class RawLMDBSystem {
    private let environment: OpaquePointer
    private let records: MDB_dbi
    private let categoryIndex: MDB_dbi
    private let priceIndex: MDB_dbi
    private let ratingIndex: MDB_dbi
    private var pooledReader: OpaquePointer?
    private let decoder = JSONDecoder()
    private let encoder = JSONEncoder()

    /// Opens (creating) an environment in `directory`; `isDurable` false adds `MDB_NOSYNC`.
    init(directory: URL, isDurable: Bool, mapSize: Int) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var created: OpaquePointer?
        try Self.check(mdb_env_create(&created), "mdb_env_create")
        guard let environment = created else { throw BenchmarkError("mdb_env_create returned no environment") }
        do {
            try Self.check(mdb_env_set_maxdbs(environment, 8), "mdb_env_set_maxdbs")
            try Self.check(mdb_env_set_mapsize(environment, mapSize), "mdb_env_set_mapsize")
            let flags = UInt32(MDB_NOTLS) | (isDurable ? 0 : UInt32(MDB_NOSYNC))
            try Self.check(directory.path.withCString { mdb_env_open(environment, $0, flags, 0o644) }, "mdb_env_open")
            var handles: [MDB_dbi] = []
            try Self.write(in: environment) { txn in
                for name in ["records", "idx.category", "idx.price", "idx.rating"] {
                    var dbi = MDB_dbi()
                    try Self.check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi), "mdb_dbi_open")
                    handles.append(dbi)
                }
            }
            self.environment = environment
            records = handles[0]
            categoryIndex = handles[1]
            priceIndex = handles[2]
            ratingIndex = handles[3]
        } catch {
            mdb_env_close(environment)
            throw error
        }
    }

    deinit {
        if let pooledReader { mdb_txn_abort(pooledReader) }
        mdb_env_close(environment)
    }

    // MARK: - Writing

    /// Saves every product in one transaction, each database's puts in key order.
    func save(contentsOf products: [Product]) throws {
        var recordPuts: [([UInt8], [UInt8])] = []
        var categoryPuts: [[UInt8]] = []
        var pricePuts: [[UInt8]] = []
        var ratingPuts: [[UInt8]] = []
        recordPuts.reserveCapacity(products.count)
        for product in products {
            let entries = try self.entries(for: product)
            recordPuts.append((entries.key, entries.value))
            categoryPuts.append(entries.category)
            pricePuts.append(entries.price)
            ratingPuts.append(entries.rating)
        }
        recordPuts.sort { $0.0.lexicographicallyPrecedes($1.0) }
        let byKey: ([UInt8], [UInt8]) -> Bool = { $0.lexicographicallyPrecedes($1) }
        let never = [UInt8](repeating: 0, count: 8)
        try Self.write(in: environment) { txn in
            for (key, value) in recordPuts { try Self.put(txn, records, key, value) }
            for key in categoryPuts.sorted(by: byKey) { try Self.put(txn, categoryIndex, key, never) }
            for key in pricePuts.sorted(by: byKey) { try Self.put(txn, priceIndex, key, never) }
            for key in ratingPuts.sorted(by: byKey) { try Self.put(txn, ratingIndex, key, never) }
        }
    }

    /// Saves one product (a new id) and its index entries in one transaction.
    func save(_ product: Product) throws {
        let entries = try self.entries(for: product)
        let never = [UInt8](repeating: 0, count: 8)
        try Self.write(in: environment) { txn in
            try Self.put(txn, records, entries.key, entries.value)
            try Self.put(txn, categoryIndex, entries.category, never)
            try Self.put(txn, priceIndex, entries.price, never)
            try Self.put(txn, ratingIndex, entries.rating, never)
        }
    }

    /// The record key and value and the three index keys of `product`.
    ///
    /// Record value: expiresAt (UInt64 LE, 0 = never), category length (UInt8), category, price and rating
    /// (IEEE bits, LE), then the JSON payload.
    private func entries(
        for product: Product
    )
        throws -> (key: [UInt8], value: [UInt8], category: [UInt8], price: [UInt8], rating: [UInt8])
    {
        let id = Array(product.id.utf8)
        let category = Array(product.category.utf8)
        guard category.count < 256 else { throw BenchmarkError("category too long") }
        let payload = try encoder.encode(product)
        var value: [UInt8] = []
        value.reserveCapacity(25 + category.count + payload.count)
        Self.appendLittleEndian(0, to: &value)
        value.append(UInt8(category.count))
        value.append(contentsOf: category)
        Self.appendLittleEndian(product.price.bitPattern, to: &value)
        Self.appendLittleEndian(product.rating.bitPattern, to: &value)
        value.append(contentsOf: payload)
        var price = Self.orderedBytes(product.price)
        price.append(contentsOf: id)
        var rating = Self.orderedBytes(product.rating)
        rating.append(contentsOf: id)
        return (id, value, category + [0] + id, price, rating)
    }

    // MARK: - Reading

    /// `mdb_get` of each id, without decoding; returns the total payload size.
    func getOnly(_ ids: ArraySlice<String>) throws -> Int {
        var total = 0
        for id in ids {
            total &+= try read { txn in
                var id = id
                return try id.withUTF8 { key in
                    try record(txn, key: UnsafeRawBufferPointer(key)).map(\.count) ?? 0
                }
            }
        }
        return total
    }

    /// `mdb_get` and decode of each id.
    func fetch(_ ids: ArraySlice<String>) throws -> Int {
        var checksum = Checksum()
        for id in ids {
            let now = Self.wallClock()
            let product = try read { txn -> Product? in
                var id = id
                return try id.withUTF8 { key in
                    guard let value = try record(txn, key: UnsafeRawBufferPointer(key)) else { return nil }
                    return try decodeLive(value, now: now)
                }
            }
            if let product { checksum.add(product) }
        }
        return checksum.value
    }

    /// The first `limit` products with a price in `range`, by price then id.
    func fetch(priceIn range: ClosedRange<Double>, limit: Int) throws -> Int {
        let now = Self.wallClock()
        let upper = Self.ordered(range.upperBound)
        return try read { txn in
            var checksum = Checksum()
            var found = 0
            try walk(txn, priceIndex, from: Self.orderedBytes(range.lowerBound)) { key, value in
                guard Self.loadBigEndian(key) <= upper else { return false }
                guard !Self.isExpired(value, now: now) else { return true }
                if let record = try record(txn, key: UnsafeRawBufferPointer(rebasing: key[8...])),
                    let product = try decodeLive(record, now: now)
                {
                    checksum.add(product)
                    found += 1
                }
                return found < limit
            }
            return checksum.value
        }
    }

    /// Products with a price in `range` (a walk of the price index): with a limit, how many came back;
    /// without one, an order-free fingerprint of them all, as `LocalStorageKitSystem.fetchUnordered` returns.
    func fetchUnordered(priceIn range: ClosedRange<Double>, limit: Int?) throws -> Int {
        let now = Self.wallClock()
        let upper = Self.ordered(range.upperBound)
        return try read { txn in
            var products: [Product] = []
            try walk(txn, priceIndex, from: Self.orderedBytes(range.lowerBound)) { key, value in
                guard Self.loadBigEndian(key) <= upper else { return false }
                guard !Self.isExpired(value, now: now) else { return true }
                if let record = try record(txn, key: UnsafeRawBufferPointer(rebasing: key[8...])),
                    let product = try decodeLive(record, now: now)
                {
                    products.append(product)
                }
                return products.count < (limit ?? .max)
            }
            return limit == nil ? Checksum.unordered(products) : products.count
        }
    }

    /// The first `limit` products of `category` by descending price: walks the price index backwards and
    /// checks each record's header (the sort index drives, as the design's planner picks it).
    func fetch(category: String, byDescendingPriceLimit limit: Int) throws -> Int {
        let now = Self.wallClock()
        let wanted = Array(category.utf8)
        return try read { txn in
            var checksum = Checksum()
            var found = 0
            try walk(txn, priceIndex, from: nil, backward: true) { key, value in
                guard !Self.isExpired(value, now: now),
                    let record = try record(txn, key: UnsafeRawBufferPointer(rebasing: key[8...])),
                    Self.category(of: record).elementsEqual(wanted),
                    let product = try decodeLive(record, now: now)
                else { return true }
                checksum.add(product)
                found += 1
                return found < limit
            }
            return checksum.value
        }
    }

    /// The number of live products with a price in `range`: a walk of the price index, no record read.
    func count(priceIn range: ClosedRange<Double>) throws -> Int {
        let now = Self.wallClock()
        let upper = Self.ordered(range.upperBound)
        return try read { txn in
            var count = 0
            try walk(txn, priceIndex, from: Self.orderedBytes(range.lowerBound)) { key, value in
                guard Self.loadBigEndian(key) <= upper else { return false }
                if !Self.isExpired(value, now: now) { count += 1 }
                return true
            }
            return count
        }
    }

    /// Page `page` (from 1) of `pageSize` products with a price in `range` by price, and the total count:
    /// one walk of the range, decoding only the page's rows.
    func page(priceIn range: ClosedRange<Double>, page: Int, pageSize: Int) throws -> Int {
        let now = Self.wallClock()
        let upper = Self.ordered(range.upperBound)
        let rows = (page - 1) * pageSize..<page * pageSize
        return try read { txn in
            var checksum = Checksum()
            var total = 0
            try walk(txn, priceIndex, from: Self.orderedBytes(range.lowerBound)) { key, value in
                guard Self.loadBigEndian(key) <= upper else { return false }
                guard !Self.isExpired(value, now: now) else { return true }
                if rows.contains(total),
                    let record = try record(txn, key: UnsafeRawBufferPointer(rebasing: key[8...])),
                    let product = try decodeLive(record, now: now)
                {
                    checksum.add(product)
                }
                total += 1
                return true
            }
            checksum.add(total)
            return checksum.value
        }
    }

    /// Decodes every live record in id order.
    func scan() throws -> Int {
        let now = Self.wallClock()
        return try read { txn in
            var checksum = Checksum()
            try walk(txn, records, from: nil) { _, value in
                if let product = try decodeLive(value, now: now) { checksum.add(product) }
                return true
            }
            return checksum.value
        }
    }

    // MARK: - Records

    /// The stored record for `key`, or nil.
    private func record(_ txn: OpaquePointer, key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var keyValue = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var value = MDB_val()
        let code = mdb_get(txn, records, &keyValue, &value)
        if code == MDB_NOTFOUND { return nil }
        try Self.check(code, "mdb_get")
        return UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
    }

    /// Decodes a record's payload in place, or nil when it has expired.
    private func decodeLive(_ record: UnsafeRawBufferPointer, now: UInt64) throws -> Product? {
        guard record.count >= 25, let base = record.baseAddress else { throw BenchmarkError("short record") }
        let expiresAt = UInt64(littleEndian: record.loadUnaligned(as: UInt64.self))
        if expiresAt != 0 && expiresAt <= now { return nil }
        let start = 9 + Int(record[8]) + 16
        let payload = Data(
            bytesNoCopy: UnsafeMutableRawPointer(mutating: base + start), count: record.count - start,
            deallocator: .none)
        return try decoder.decode(Product.self, from: payload)
    }

    /// The category bytes in a record's header.
    private static func category(of record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: record[9..<9 + Int(record[8])])
    }

    /// Whether an index entry's expiry (8 bytes, LE ns, 0 = never) is past.
    private static func isExpired(_ entry: UnsafeRawBufferPointer, now: UInt64) -> Bool {
        let expiresAt = UInt64(littleEndian: entry.loadUnaligned(as: UInt64.self))
        return expiresAt != 0 && expiresAt <= now
    }

    // MARK: - Transactions and cursors

    /// Runs `body` in the pooled read transaction (renewed before, reset after).
    private func read<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        let txn: OpaquePointer
        if let pooled = pooledReader {
            pooledReader = nil
            let code = mdb_txn_renew(pooled)
            if code != MDB_SUCCESS {
                mdb_txn_abort(pooled)
                try Self.check(code, "mdb_txn_renew")
            }
            txn = pooled
        } else {
            var fresh: OpaquePointer?
            try Self.check(mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &fresh), "mdb_txn_begin")
            guard let fresh else { throw BenchmarkError("mdb_txn_begin returned no transaction") }
            txn = fresh
        }
        defer {
            mdb_txn_reset(txn)
            pooledReader = txn
        }
        return try body(txn)
    }

    /// Runs `body` in a write transaction and commits it.
    private static func write(in environment: OpaquePointer, _ body: (OpaquePointer) throws -> Void) throws {
        var begun: OpaquePointer?
        try check(mdb_txn_begin(environment, nil, 0, &begun), "mdb_txn_begin")
        guard let txn = begun else { throw BenchmarkError("mdb_txn_begin returned no transaction") }
        do {
            try body(txn)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try check(mdb_txn_commit(txn), "mdb_txn_commit")
    }

    /// Walks `dbi` from the first key ≥ `start` (or from the first or last key), calling `body` with each
    /// key and value until it returns false.
    private func walk(
        _ txn: OpaquePointer, _ dbi: MDB_dbi, from start: [UInt8]?, backward: Bool = false,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        var opened: OpaquePointer?
        try Self.check(mdb_cursor_open(txn, dbi, &opened), "mdb_cursor_open")
        guard let cursor = opened else { throw BenchmarkError("mdb_cursor_open returned no cursor") }
        defer { mdb_cursor_close(cursor) }
        let startKey = start ?? []
        try startKey.withUnsafeBytes { startBytes in
            var key = MDB_val(
                mv_size: startBytes.count,
                mv_data: UnsafeMutableRawPointer(mutating: startBytes.baseAddress))
            var value = MDB_val()
            var operation = start != nil ? MDB_SET_RANGE : (backward ? MDB_LAST : MDB_FIRST)
            while true {
                let code = mdb_cursor_get(cursor, &key, &value, operation)
                if code == MDB_NOTFOUND { return }
                try Self.check(code, "mdb_cursor_get")
                operation = backward ? MDB_PREV : MDB_NEXT
                let keyBytes = UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)
                let valueBytes = UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
                guard try body(keyBytes, valueBytes) else { return }
            }
        }
    }

    private static func put(_ txn: OpaquePointer, _ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]) throws {
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { valueBytes in
                var keyValue = MDB_val(
                    mv_size: keyBytes.count,
                    mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                var dataValue = MDB_val(
                    mv_size: valueBytes.count,
                    mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                try check(mdb_put(txn, dbi, &keyValue, &dataValue, 0), "mdb_put")
            }
        }
    }

    private static func check(_ code: Int32, _ function: String) throws {
        guard code == MDB_SUCCESS else {
            throw BenchmarkError("\(function): \(String(cString: mdb_strerror(code))) (\(code))")
        }
    }
}
