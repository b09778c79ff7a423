import CLMDB
import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// Random bytes overwritten at random places of a 500-record store (issue 21): `verify` reports damage or
/// calls the store clean but never crashes, and `verify --repair` leaves a store that opens, whose records
/// decode and equal the originals wherever the damage did not touch their bytes.
@Suite struct RandomDamageTests {
    /// A small seeded generator (SplitMix64): every seed damages the same bytes on every run.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Makes the store; returns the name of the type's records database.
    private func makeStore(_ configuration: LocalStorageConfiguration) async throws -> String {
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(contentsOf: (0..<500).map(Product.sample))
        return "r.\(try await storage.core.schema(for: Product.self).number)"
    }

    /// Where in the closed store's data file each record's stored bytes lie, read with the C API alone
    /// (read-only: nothing commits and moves them).
    private func recordRanges(_ files: URL, database: String) throws -> [String: Range<Int>] {
        var env: OpaquePointer?
        #expect(mdb_env_create(&env) == 0)
        defer { mdb_env_close(env) }
        #expect(mdb_env_set_maxdbs(env, 64) == 0)
        #expect(mdb_env_open(env, files.path, UInt32(MDB_RDONLY), 0o644) == 0)
        var stat = MDB_stat()
        #expect(mdb_env_stat(env, &stat) == 0)
        let pageSize = UInt(stat.ms_psize)
        var txn: OpaquePointer?
        #expect(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn) == 0)
        defer { mdb_txn_abort(txn) }
        var dbi: MDB_dbi = 0
        #expect(database.withCString { mdb_dbi_open(txn, $0, 0, &dbi) } == 0)
        var ranges: [String: Range<Int>] = [:]
        for n in 0..<500 {
            var id = Array("sku_\(n)".utf8)
            var value = MDB_val()
            let code = id.withUnsafeMutableBytes { raw in
                var key = MDB_val(mv_size: raw.count, mv_data: raw.baseAddress)
                return mdb_get(txn, dbi, &key, &value)
            }
            guard code == 0, let data = value.mv_data else { continue }
            // The map starts at the file's first byte; a page names its own number in its first 8 bytes.
            let address = UInt(bitPattern: data)
            let pageStart = address & ~(pageSize - 1)
            let pageNumber = try #require(UnsafeRawPointer(bitPattern: pageStart)).load(as: UInt64.self)
            let start = Int(address - (pageStart - UInt(pageNumber) * pageSize))
            ranges["sku_\(n)"] = start..<start + value.mv_size
        }
        return ranges
    }

    // 20 seeds: each runs the CLI's verify three or four times (about a second of CPU in a debug build).
    @Test(arguments: 0..<20)
    func randomDamageIsReportedNeverCrashesAndIsSalvaged(seed: Int) async throws {
        let directory = temporaryDirectory()
        let configuration = diskConfiguration(directory)
        let database = try await makeStore(configuration)  // The store closes again on return.
        let files = configuration.storeDirectory
        let ranges = try recordRanges(files, database: database)
        #expect(ranges.count == 500)
        let url = files.appendingPathComponent("data.mdb")
        var bytes = [UInt8](try Data(contentsOf: url))
        var random = SplitMix(state: UInt64(seed))
        var hit = Set<Int>()
        for _ in 0..<50 {
            let offset = Int(random.next() % UInt64(bytes.count))
            bytes[offset] = UInt8(truncatingIfNeeded: random.next())
            hit.insert(offset)
        }
        try Data(bytes).write(to: url)

        // The damaged file is only ever read by the CLI: this process must not trust it to LMDB.
        let verify = try await CLIResult.run(["verify", "--store", files.path], environment: nil)
        #expect([0, 1].contains(verify.status), "\(verify.stdout)\(verify.stderr)")
        #expect(!(verify.stdout + verify.stderr).isEmpty)
        let repair = try await CLIResult.run(["verify", "--repair", "--store", files.path], environment: nil)
        if repair.stderr.contains("well-formed but cannot be read") {
            // Damage that leaves a type's description well-formed JSON this version cannot read looks like a newer
            // version's description: no repair drops that type's records, and the file is left as it was.
            #expect(repair.status != 0, "seed \(seed)")
            #expect(try Data(contentsOf: url) == Data(bytes), "seed \(seed): the refused repair changed the file")
            return
        }
        // Damage to a header's first two bytes can look like a newer version's record (a later layout or payload
        // format), which no repair removes: it is left for the user to delete, as here. Nothing else may remain.
        let left = try await CLIResult.run(["verify", "--json", "--store", files.path], environment: nil)
        let remaining = try JSONDecoder().decode(VerifyReport.self, from: Data(left.stdout.utf8)).problems
        #expect(repair.status == (remaining.isEmpty ? 0 : 1), "seed \(seed): \(repair.stdout)\(repair.stderr)")
        for problem in remaining {
            let id = try #require(problem.id, "seed \(seed): \(problem)")
            #expect(problem.kind == .newerRecord, "seed \(seed): \(problem)")
            #expect(ranges[id].map { range in hit.contains { range.contains($0) } } == true, "seed \(seed): \(id)")
            let deleted = try await CLIResult.run(["delete", "Product", id, "--store", files.path], environment: nil)
            #expect(deleted.status == 0, "seed \(seed): \(deleted.stderr)")
        }
        if remaining.isEmpty {
            // The JSON run above was the last verify of an unchanged store: its status says it is clean.
            #expect(left.status == 0, "seed \(seed): \(left.stdout)\(left.stderr)")
        } else {
            let after = try await CLIResult.run(["verify", "--store", files.path], environment: nil)
            #expect(after.status == 0, "seed \(seed): \(after.stdout)\(after.stderr)")
        }

        let storage = try LocalStorage(configuration: configuration)
        var present = 0
        for n in 0..<500 {
            let id = "sku_\(n)"
            let touched = ranges[id].map { range in hit.contains { range.contains($0) } } ?? true
            do {
                guard let found = try await storage.fetch(Product.self, id: id) else { continue }
                present += 1
                if !touched { #expect(found == Product.sample(n), "seed \(seed): \(id)") }
            } catch {
                #expect(touched, "seed \(seed): \(id) was not damaged but does not decode: \(error)")
            }
        }
        if verify.status == 0 {
            // Nothing was found wrong, so nothing was lost: every record the damage missed is there.
            let untouched = (0..<500).filter { n in
                !(ranges["sku_\(n)"].map { r in hit.contains { r.contains($0) } } ?? true)
            }
            #expect(present >= untouched.count, "seed \(seed)")
        }
        // The repaired store takes writes, and its counts agree with what it holds.
        try await storage.save(Product.sample(1_000))
        #expect(try await storage.fetch(Product.self, id: "sku_1000") == Product.sample(1_000))
    }

    @Test func repairRemovesARecordWhoseBytesCannotBeReadAndTheCountsAgree() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(contentsOf: (0..<12).map(Product.sample))
        let schema = try await storage.core.schema(for: Product.self)
        try await storage.core.writer.perform { context in
            try context.txn.put(schema.records, key: Array("sku_3".utf8), value: [0xDE, 0xAD, 0xBE, 0xEF])
        }
        let store = storage.configuration.storeDirectory.path
        let verify = try await CLIResult.run(["verify", "--json", "--store", store], environment: nil)
        #expect(verify.status == 1)
        let report = try JSONDecoder().decode(VerifyReport.self, from: Data(verify.stdout.utf8))
        #expect(report.problems.map(\.kind) == [.damagedRecord])
        #expect(report.problems.first?.type == "Product")
        #expect(report.problems.first?.id == "sku_3")

        let repair = try await CLIResult.run(["verify", "--repair", "--store", store], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        #expect(repair.stdout.contains("Removed Product sku_3: it could not be read ("), "\(repair.stdout)")
        #expect(try await storage.fetch(Product.self, id: "sku_3") == nil)
        #expect(try await storage.count(Product.self) == 11)
        #expect(try await storage.fetch(Product.self).count == 11)
        #expect(
            try await storage.count(Product.self, matching: [.equals("category", Product.sample(3).category)])
                == (0..<12).filter { $0 != 3 && Product.sample($0).category == Product.sample(3).category }.count)
        #expect(try await CLIResult.run(["verify", "--store", store], environment: nil).status == 0)
    }

    @Test func removeStoreRefusesAnOpenStoreAndRemovesAClosedOne() async throws {
        let directory = temporaryDirectory()
        let configuration = diskConfiguration(directory)
        do {
            let storage = try LocalStorage(configuration: configuration)
            try await storage.save(Note(id: "a", text: "b"))
            #expect(throws: LocalStorageError.self) { try LocalStorage.removeStore(at: directory) }
            #expect(try await storage.fetch(Note.self, id: "a") != nil)
        }
        try LocalStorage.removeStore(at: directory)
        #expect(!FileManager.default.fileExists(atPath: configuration.storeDirectory.path))
        let fresh = try LocalStorage(configuration: configuration)
        #expect(try await fresh.count(Note.self) == 0)
        try LocalStorage.removeStore(at: temporaryDirectory())  // No store there: nothing to do.
    }
}
