import CLMDB
import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// ``RepackingCopy`` against a model: an environment of random entries (a plain database, one of sorted duplicates,
/// an empty one, and an entry of the main database's own), most of them deleted again, copies to one holding the
/// same entries with the same flags, in fewer pages.
@Suite struct RepackingCopyTests {
    typealias Entries = [[UInt8]: [[UInt8]]]

    /// Seeds, and how many entries and bytes a transaction of the copy takes (small ones: many commits, and a
    /// database's entries spread over several).
    @Test(arguments: [
        (1 as UInt64, RepackingCopy.entriesPerTransaction, RepackingCopy.bytesPerTransaction), (2, 700, 1 << 30),
        (3, 1 << 30, 40_000),
    ])
    func theCopyHoldsEveryEntryOfEveryDatabase(seed: UInt64, entryLimit: Int, byteLimit: Int) throws {
        var random = SplitMix64(seed: seed)
        func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let source = try open(directory.path, flags: 0)
        defer { mdb_env_close(source) }
        // The model: each database's keys and their values (one value for a plain database's key).
        var plain: Entries = [:]
        var sorted: Entries = [:]
        let mainKey = Array("a plain entry".utf8)
        let mainValue = bytes(40)
        try write(source) { txn in
            let plainHandle = try database("plain", txn, create: true)
            let sortedHandle = try database("sorted", flags: UInt32(MDB_DUPSORT), txn, create: true)
            _ = try database("empty", txn, create: true)
            try put(txn, try database(nil, txn), mainKey, mainValue, flags: 0)
            for _ in 0..<6_000 {
                let key = bytes(4 + Int(random.next() % 20))
                // One in a hundred large enough for overflow pages.
                let value = bytes(
                    random.next() % 100 == 0 ? 5_000 + Int(random.next() % 9_000) : Int(random.next() % 300))
                try put(txn, plainHandle, key, value, flags: 0)
                plain[key] = [value]
            }
            for _ in 0..<8_000 {
                let key = bytes(1 + Int(random.next() % 2))  // few keys, many duplicates each
                let value = bytes(1 + Int(random.next() % 30))
                try put(txn, sortedHandle, key, value, flags: 0)
                sorted[key, default: []].append(value)
            }
        }
        // Nine in ten deleted, so the trees' pages are left sparse.
        try write(source) { txn in
            let plainHandle = try database("plain", txn)
            let sortedHandle = try database("sorted", txn)
            for key in plain.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where random.next() % 10 != 0 {
                try delete(txn, plainHandle, key)
                plain[key] = nil
            }
            for key in sorted.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                for value in Set(sorted[key] ?? []) where random.next() % 10 != 0 {
                    try delete(txn, sortedHandle, key, value)
                    sorted[key]?.removeAll { $0 == value }
                }
                if sorted[key]?.isEmpty == true { sorted[key] = nil }
            }
        }
        let copyPath = directory.appendingPathComponent("copy.mdb").path
        try RepackingCopy.copy(
            from: source, toFile: copyPath, mapSize: 1 << 30, fileMode: 0o600, entriesPerTransaction: entryLimit,
            bytesPerTransaction: byteLimit)
        let copy = try open(copyPath, flags: UInt32(MDB_NOSUBDIR | MDB_RDONLY))
        defer { mdb_env_close(copy) }
        for environment in [source, copy] {
            try read(environment) { txn in
                #expect(try entries(txn, try database("plain", txn)) == plain)
                let sortedHandle = try database("sorted", txn)
                var flags: UInt32 = 0
                #expect(mdb_dbi_flags(txn, sortedHandle, &flags) == MDB_SUCCESS && flags & UInt32(MDB_DUPSORT) != 0)
                #expect(try entries(txn, sortedHandle) == sorted.mapValues { Set($0).sorted(by: byBytes) })
                #expect(try entries(txn, try database("empty", txn)).isEmpty)
                let main = try entries(txn, try database(nil, txn))
                #expect(main[mainKey] == [mainValue])
            }
        }
        #expect(pages(copy) * 2 < pages(source), "copy \(pages(copy)) pages, source \(pages(source))")
    }

    private func byBytes(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

    private func open(_ path: String, flags: UInt32) throws -> OpaquePointer {
        var environment: OpaquePointer?
        try #require(mdb_env_create(&environment) == MDB_SUCCESS)
        let raw = try #require(environment)
        mdb_env_set_maxdbs(raw, 8)
        mdb_env_set_mapsize(raw, 1 << 30)
        try #require(mdb_env_open(raw, path, flags | UInt32(MDB_NOTLS), 0o600) == MDB_SUCCESS)
        return raw
    }

    private func write(_ environment: OpaquePointer, _ body: (OpaquePointer) throws -> Void) throws {
        var txn: OpaquePointer?
        try #require(mdb_txn_begin(environment, nil, 0, &txn) == MDB_SUCCESS)
        let raw = try #require(txn)
        try body(raw)
        try #require(mdb_txn_commit(raw) == MDB_SUCCESS)
    }

    private func read(_ environment: OpaquePointer, _ body: (OpaquePointer) throws -> Void) throws {
        var txn: OpaquePointer?
        try #require(mdb_txn_begin(environment, nil, UInt32(MDB_RDONLY), &txn) == MDB_SUCCESS)
        let raw = try #require(txn)
        defer { mdb_txn_abort(raw) }
        try body(raw)
    }

    /// Opens the database `name` (nil: the main one), creating it with `flags` when `create`.
    private func database(
        _ name: String?, flags: UInt32 = 0, _ txn: OpaquePointer, create: Bool = false
    ) throws -> MDB_dbi {
        var handle: MDB_dbi = 0
        let code = mdb_dbi_open(txn, name, flags | (create ? UInt32(MDB_CREATE) : 0), &handle)
        try #require(code == MDB_SUCCESS, "mdb_dbi_open \(name ?? "main"): \(code)")
        return handle
    }

    private func put(_ txn: OpaquePointer, _ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8], flags: UInt32) throws {
        var key = key
        var value = value
        let code = key.withUnsafeMutableBytes { k in
            value.withUnsafeMutableBytes { v in
                var keyVal = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
                var valueVal = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
                return mdb_put(txn, dbi, &keyVal, &valueVal, flags)
            }
        }
        try #require(code == MDB_SUCCESS)
    }

    /// Deletes `key` of a plain database, or with `value` the pair of a database of sorted duplicates.
    private func delete(_ txn: OpaquePointer, _ dbi: MDB_dbi, _ key: [UInt8], _ value: [UInt8]? = nil) throws {
        var key = key
        var data = value ?? []
        let code = key.withUnsafeMutableBytes { k in
            data.withUnsafeMutableBytes { v in
                var keyVal = MDB_val(mv_size: k.count, mv_data: k.baseAddress)
                var valueVal = MDB_val(mv_size: v.count, mv_data: v.baseAddress)
                return withUnsafeMutablePointer(to: &valueVal) { mdb_del(txn, dbi, &keyVal, value == nil ? nil : $0) }
            }
        }
        try #require(code == MDB_SUCCESS)
    }

    private func entries(_ txn: OpaquePointer, _ dbi: MDB_dbi) throws -> Entries {
        var cursor: OpaquePointer?
        try #require(mdb_cursor_open(txn, dbi, &cursor) == MDB_SUCCESS)
        defer { mdb_cursor_close(cursor) }
        var found: Entries = [:]
        var key = MDB_val()
        var value = MDB_val()
        var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while code == MDB_SUCCESS {
            let keyBytes = Array(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size))
            found[keyBytes, default: []].append(
                Array(UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)))
            code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        try #require(code == MDB_NOTFOUND)
        return found
    }

    /// The pages the environment's data file uses (its last page number plus one).
    private func pages(_ environment: OpaquePointer) -> Int {
        var info = MDB_envinfo()
        mdb_env_info(environment, &info)
        return info.me_last_pgno + 1
    }
}
