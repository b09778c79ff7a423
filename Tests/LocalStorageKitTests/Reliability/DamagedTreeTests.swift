import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// Damage the open's checks do not reach, met by the CLI's whole-database commands and by a repair (found by
/// new-user trials): a damaged leaf deep in a type's records tree ended `stats` and `export` with SIGSEGV inside
/// LMDB; a byte changed in a database name of the main database made `verify --repair` salvage none of the
/// records and call the store clean; a type whose description cannot be read was left out of `export` in silence
/// and lost by a repair that said it was "left untouched".
@Suite struct DamagedTreeTests {
    /// A closed store of 500 products (its records tree two levels deep) and the data file's path.
    private func makeStore() async throws -> (configuration: LocalStorageConfiguration, dataFile: URL, number: UInt32) {
        let configuration = diskConfiguration(temporaryDirectory())
        let number = try await withStore(configuration) { storage in
            try await storage.save(contentsOf: (0..<500).map(Product.sample))
            try await storage.save(Note(id: "n1", text: "one"))
            return try await storage.core.schema(for: Product.self).number
        }
        return (configuration, configuration.storeDirectory.appendingPathComponent("data.mdb"), number)
    }

    /// The page at `number` of `bytes` (the whole file), with its size.
    private func pageRange(_ number: UInt64, pageSize: Int) -> Range<Int> {
        Int(number) * pageSize..<(Int(number) + 1) * pageSize
    }

    /// The `index`th node's offset in a page that starts at `start`.
    private func nodeOffset(_ bytes: [UInt8], page start: Int, index: Int) -> Int {
        let at = start + DataFilePages.headerSize + 2 * index
        return start + Int(bytes[at]) | Int(bytes[at + 1]) << 8
    }

    @Test func wholeDatabaseCommandsReportADamagedLeafInsteadOfCrashing() async throws {
        let (configuration, dataFile, number) = try await makeStore()
        let (walk, meta) = try walkDataFile(dataFile.path)
        let records = try #require(walk.databases["r.\(number)"])
        try #require(records.depth == 2)
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        // The branch root's second node points at a leaf (the first node's key is empty, its child too).
        let root = pageRange(records.root, pageSize: meta.pageSize)
        let node = nodeOffset(bytes, page: root.lowerBound, index: 1)
        let leaf = UInt64(bytes[node]) | UInt64(bytes[node + 1]) << 8 | UInt64(bytes[node + 2]) << 16
        // That leaf's first entry now says it holds sorted duplicates, which LMDB follows into a cursor the
        // records database does not have.
        let first = nodeOffset(bytes, page: pageRange(leaf, pageSize: meta.pageSize).lowerBound, index: 0)
        bytes[first + 4] |= UInt8(DataFilePages.dupData)
        try Data(bytes).write(to: dataFile)

        let files = configuration.storeDirectory.path
        for command in [["stats"], ["export"], ["list", "Product"], ["clear", "Product", "--yes"]] {
            let result = try await CLIResult.run(command + ["--store", files], environment: nil)
            #expect(result.status == 1, "\(command): \(result.status) \(result.stdout)\(result.stderr)")
            #expect(
                result.stderr.contains("damaged at page \(leaf) of database r.\(number)"),
                "\(command): \(result.stderr)")
        }
        // Another type's records are still listed and exported.
        let notes = try await CLIResult.run(["export", "Note", "--store", files], environment: nil)
        #expect(notes.status == 0, "\(notes.stderr)")
        #expect(notes.stdout.contains("\"n1\""))
        #expect(try await CLIResult.run(["list", "Note", "--store", files], environment: nil).status == 0)
    }

    @Test func aRepairReadsPastAMainDatabaseKeyOutOfOrder() async throws {
        let (configuration, dataFile, number) = try await makeStore()
        let (_, meta) = try walkDataFile(dataFile.path)
        try #require(meta.main.depth == 1)
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        // One byte of a database name in the main database's only page: `e.N` becomes `z.N`, after names
        // that sort later, so the page's keys are out of order and the open refuses the store.
        let page = pageRange(meta.main.root, pageSize: meta.pageSize)
        let name = Array("e.\(number)".utf8)
        let at = try #require(
            page.first { bytes[$0..<min(page.upperBound, $0 + name.count)].elementsEqual(name) })
        bytes[at] = UInt8(ascii: "z")
        try Data(bytes).write(to: dataFile)
        expectOpenFailed(configuration.databaseDirectory, mentioning: ["out of order"])

        let files = configuration.storeDirectory.path
        let repair = try await CLIResult.run(["verify", "--repair", "--store", files], environment: nil)
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        #expect(repair.stdout.contains("Salvaged 501 of the 501 records the damaged file counts"), "\(repair.stdout)")
        // The damaged file is kept beside the fresh one, byte for byte.
        let kept = dataFile.path + ".damaged"
        #expect(repair.stdout.contains(kept), "\(repair.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: kept)) == Data(bytes))

        let storage = try LocalStorage(configuration: configuration)
        for n in 0..<500 { #expect(try await storage.fetch(Product.self, id: "sku_\(n)") == Product.sample(n)) }
        #expect(try await storage.fetch(Note.self, id: "n1") == Note(id: "n1", text: "one"))
    }

    @Test func aTypeWhoseDescriptionCannotBeReadIsReportedByExportAndCountedLostByARepair() async throws {
        let (configuration, dataFile, _) = try await makeStore()
        try await withStore(configuration) { storage in
            // Twice: a salvage reads the snapshot of either meta page, and the older one would still hold it.
            for damage in ["{damaged", "{damaged again"] {
                try storage.core.environment.write { txn in
                    try txn.put(storage.core.meta, key: TypeInfo.key("Product"), value: Array(damage.utf8))
                }
            }
        }
        let files = configuration.storeDirectory.path
        for arguments in [["export"], ["export", "Product", "Note"]] {
            let export = try await CLIResult.run(arguments + ["--store", files], environment: nil)
            #expect(export.status == 1, "\(arguments): \(export.stderr)")
            #expect(
                export.stderr.contains("skipped Product: its description in meta cannot be read"), "\(export.stderr)")
            #expect(export.stderr.contains("1 type whose description cannot be read"), "\(export.stderr)")
            #expect(export.stdout.contains("\"n1\""), "\(arguments)")
        }
        let repair = try await CLIResult.run(["verify", "--repair", "--store", files], environment: nil)
        #expect(repair.stdout.contains("lost Product: its description in meta cannot be read"), "\(repair.stdout)")
        #expect(!repair.stdout.contains("left untouched"), "\(repair.stdout)")
        #expect(repair.stdout.contains("Salvaged 1 of the 501 records the damaged file counts"), "\(repair.stdout)")
        #expect(repair.stdout.contains("500 are lost"), "\(repair.stdout)")
        #expect(FileManager.default.fileExists(atPath: dataFile.path + ".damaged"))
    }
}
