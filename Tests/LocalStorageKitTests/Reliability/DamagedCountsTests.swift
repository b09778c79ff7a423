import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// Counts a damaged file claims, met by the page walk and `stats` (review-89 D1, D2): a sub-database record of an
/// index (a value's ids, once there are too many for one node) claiming pages beyond the file passed `verify` and
/// made `stats` trap converting what it added up; two claiming entries near 2^64 made every walk trap adding them.
@Suite struct DamagedCountsTests {
    /// A closed store of 2,000 products (three categories: each one's ids a sub-database of the category index),
    /// its data file, and the offsets in the file of the sub-database records of the category index's leaf.
    /// With `unreadableNote`, the description of a second type, `Note`, is made unreadable in both meta pages' snapshots.
    private func storeWithSubDatabases(
        unreadableNote: Bool = false
    ) async throws -> (
        configuration: LocalStorageConfiguration, dataFile: URL, records: [Int]
    ) {
        let configuration = diskConfiguration(temporaryDirectory())
        let number = try await withStore(configuration) { storage in
            try await storage.save(contentsOf: (0..<2_000).map(Product.sample))
            try await storage.save(Note(id: "n1", text: "one"))
            if unreadableNote {
                for damage in ["{damaged", "{damaged again"] {
                    try storage.core.environment.write { txn in
                        try txn.put(storage.core.meta, key: TypeInfo.key("Note"), value: Array(damage.utf8))
                    }
                }
            }
            return try await storage.core.schema(for: Product.self).number
        }
        let dataFile = configuration.storeDirectory.appendingPathComponent("data.mdb")
        let (walk, meta) = try walkDataFile(dataFile.path)
        #expect(walk.problems.isEmpty, "\(walk.problems.prefix(3))")
        let bytes = [UInt8](try Data(contentsOf: dataFile))
        // The category index: three keys in one leaf.
        var records: [Int] = []
        for (name, index) in walk.databases where name.hasPrefix("i.\(number).") && index.depth == 1 {
            let start = Int(index.root) * meta.pageSize
            let count = (Int(bytes[start + 12]) | Int(bytes[start + 13]) << 8 - DataFilePages.headerSize) / 2
            guard count == 3 else { continue }
            for position in 0..<count {
                let at = start + DataFilePages.headerSize + 2 * position
                let node = start + (Int(bytes[at]) | Int(bytes[at + 1]) << 8)
                let flags = UInt16(bytes[node + 4]) | UInt16(bytes[node + 5]) << 8
                guard flags & DataFilePages.dupData != 0, flags & DataFilePages.subData != 0 else { continue }
                let keySize = Int(bytes[node + 6]) | Int(bytes[node + 7]) << 8
                records.append(node + DataFilePages.nodeSize + keySize)
            }
        }
        try #require(records.count == 3, "each category's ids should be a sub-database")
        return (configuration, dataFile, records)
    }

    /// Writes `value` little-endian at `offset` of the file.
    private func write(_ value: UInt64, at offset: Int, in dataFile: URL) throws {
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        for byte in 0..<8 { bytes[offset + byte] = UInt8(truncatingIfNeeded: value >> (8 * byte)) }
        try Data(bytes).write(to: dataFile)
    }

    @Test func aSubDatabaseClaimingMorePagesThanTheFileIsReportedNotAdded() async throws {
        let (configuration, dataFile, records) = try await storeWithSubDatabases()
        // The top bit of the first sub-database's branch-page count (LMDB never reads it to find its way).
        try write(1 << 63 | 1, at: records[0] + 8, in: dataFile)
        let (walk, _) = try walkDataFile(dataFile.path)
        #expect(walk.problems.contains { $0.detail.contains("branch/leaf/overflow pages") }, "\(walk.problems)")
        // The walk `stats` makes counts sub-trees from their records instead of walking them: it refuses the claim too.
        let descriptor = open(dataFile.path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var pages = DataFilePages(descriptor: descriptor)
        var counting = DataFileWalk(pages: pages, meta: try #require(DataFileWalk.newestMeta(&pages).0))
        counting.countsSubTreesFromRecords = true
        counting.run()
        #expect(counting.problems.contains { $0.detail.contains("the file has") }, "\(counting.problems)")
        // `stats` reports the damage instead of trapping on the sum.
        let maintenance = try await StoreMaintenance(directory: configuration.storeDirectory)
        let error = #expect(throws: (any Error).self) { _ = try maintenance.statistics() }
        #expect("\(error.map { "\($0)" } ?? "")".contains("damaged"), "\(String(describing: error))")
    }

    @Test func subDatabaseEntryCountsNearTwoToTheSixtyFourAreReportedNotAdded() async throws {
        let (configuration, dataFile, records) = try await storeWithSubDatabases()
        for record in records.prefix(2) { try write(UInt64.max - 16, at: record + 32, in: dataFile) }
        let (walk, _) = try walkDataFile(dataFile.path)
        #expect(walk.problems.contains { $0.detail.contains("entries") }, "\(walk.problems)")
        let maintenance = try await StoreMaintenance(directory: configuration.storeDirectory)
        #expect(throws: (any Error).self) { _ = try maintenance.statistics() }
    }

    /// `verify` on a damaged file names the types whose descriptions cannot be read too: it reported the damaged pages
    /// alone, and a repair then refused for a description that looked written by a newer version (trial89 #2).
    @Test func verifyOfADamagedFileNamesTheUnreadableDescriptionsToo() async throws {
        let (configuration, dataFile, records) = try await storeWithSubDatabases(unreadableNote: true)
        try write(1 << 40, at: records[0] + 16, in: dataFile)
        let report = try await StoreMaintenance(directory: configuration.storeDirectory).verify()
        #expect(report.problems.contains { $0.kind == .damagedFile }, "\(report.problems)")
        #expect(report.problems.contains { $0.kind == .unreadableType && $0.type == "Note" }, "\(report.problems)")
    }

    /// A database with sorted duplicates claiming a page more than its own tree has: its own pages were compared only
    /// for databases without duplicates, so this passed `verify` (review-90 R2).
    @Test func anIndexClaimingAPageTooManyIsReported() async throws {
        let (_, dataFile, _) = try await storeWithSubDatabases()
        let (walk, meta) = try walkDataFile(dataFile.path)
        let name = try #require(walk.databases.keys.first { $0.hasPrefix("i.") && walk.databases[$0]?.depth == 1 })
        // The database's record in the main database's one leaf.
        try #require(meta.main.depth == 1)
        let bytes = [UInt8](try Data(contentsOf: dataFile))
        let start = Int(meta.main.root) * meta.pageSize
        let count = (Int(bytes[start + 12]) | Int(bytes[start + 13]) << 8 - DataFilePages.headerSize) / 2
        var record: Int?
        for position in 0..<count {
            let at = start + DataFilePages.headerSize + 2 * position
            let node = start + (Int(bytes[at]) | Int(bytes[at + 1]) << 8)
            let keySize = Int(bytes[node + 6]) | Int(bytes[node + 7]) << 8
            let key = bytes[(node + DataFilePages.nodeSize)..<(node + DataFilePages.nodeSize + keySize)]
            if String(decoding: key, as: UTF8.self) == name { record = node + DataFilePages.nodeSize + keySize }
        }
        let offset = try #require(record) + 16  // md_leaf_pages
        let leaves = try #require(walk.databases[name]).leafPages
        try write(leaves + 1, at: offset, in: dataFile)
        let (damaged, _) = try walkDataFile(dataFile.path)
        #expect(
            damaged.problems.contains { $0.database == name && $0.detail.contains("branch/leaf/overflow pages") },
            "\(damaged.problems)")
    }
}
