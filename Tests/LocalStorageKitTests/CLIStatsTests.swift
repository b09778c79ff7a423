import Foundation
import Testing

@_spi(Maintenance) @_spi(Testing) @testable import LocalStorageKit

/// `localstorage stats`: the figures ``LocalStorage/statistics()`` reports, and the free pages a `compact`
/// gives back.
@Suite struct CLIStatsTests {
    @Test func statsShowTheStoresFiguresAndWhatACompactGivesBack() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        let text = String(repeating: "x", count: 2_000)
        try await storage.save(contentsOf: (0..<300).map { Note(id: "n\($0)", text: text) })
        for n in 0..<250 { try await storage.delete(Note.self, id: "n\(n)") }
        try await storage.save(contentsOf: (0..<4).map(Product.sample))
        try await storage.save(Product.sample(4), expiration: .date(Date(timeIntervalSince1970: 1)))
        let expected = try await storage.statistics()
        let store = storage.configuration.storeDirectory.path

        let json = try await CLIResult.run(["stats", "--json", "--store", store], environment: nil)
        #expect(json.status == 0, "\(json.stderr)")
        let figures = try JSONDecoder().decode(StoreStatistics.self, from: Data(json.stdout.utf8))
        #expect(figures.records == expected.records)
        #expect(figures.records == 55)
        #expect(figures.payloadBytes == expected.payloadBytes)
        #expect(figures.expired == expected.expiredRecords)
        #expect(figures.expired == 1)
        for type in figures.types {
            let own = try #require(expected.types[type.name])
            #expect(type.records == own.records)
            #expect(type.payloadBytes == own.payloadBytes)
            #expect(type.expired == own.expiredRecords)
        }
        #expect(figures.mapUsedBytes == expected.mapUsedBytes)
        #expect(figures.reclaimableBytes == figures.pages.free * figures.pageSize)
        #expect(figures.reclaimableBytes > 0)  // 250 deleted records of 2 KB left free pages behind.
        #expect(figures.fileBytes >= figures.usedBytes - figures.reclaimableBytes)

        let plain = try await CLIResult.run(["stats", "--store", store], environment: nil)
        #expect(plain.status == 0)
        #expect(plain.stdout.contains("Total     55 records"))
        #expect(plain.stdout.contains("the least a compact gives back"))

        let copy = directory.appendingPathComponent("compacted")
        let compact = try await CLIResult.run(
            ["compact", "--output", copy.path, "--json", "--store", store],
            environment: nil)
        #expect(compact.status == 0, "\(compact.stderr)")
        let report = try JSONDecoder().decode(CompactReport.self, from: Data(compact.stdout.utf8))
        // The copy leaves the free pages out.
        #expect(report.compactedBytes <= report.originalBytes - figures.reclaimableBytes)
    }

    struct Rocket: LocalStorageIndexed {
        let id: String
        var label: String
        static var storageName: String { "rocket 🚀🚀🚀🚀🚀🚀 launches" }
        static var storageIndexes: [StorageIndex<Rocket>] { [StorageIndex("label 🚀🚀🚀🚀🚀", \.label)] }
    }

    /// The list of databases pads names to one column by characters: padding by UTF-16 units (Foundation's
    /// `padding(toLength:)`) cut the longest names with emoji short, their closing quote with them (trial66).
    @Test func statsShowWholeDatabaseNamesWithEmoji() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(Rocket(id: "r1", label: "first"))
        let plain = try await CLIResult.run(
            ["stats", "--store", storage.configuration.storeDirectory.path], environment: nil)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout.contains("rocket 🚀🚀🚀🚀🚀🚀 launches/index label 🚀🚀🚀🚀🚀  1 pages"), "\(plain.stdout)")
        #expect(plain.stdout.contains("rocket 🚀🚀🚀🚀🚀🚀 launches/records            1 pages"), "\(plain.stdout)")
    }
}

/// `mdb_stat` counts the pages of a database with sorted duplicates without its duplicates' sub-trees: an
/// index of 6,000 records on three categories showed 1 page. The statistics add the sub-trees from their
/// records; a walk of every page of the file is the reference.
@Suite struct StatisticsPagesTests {
    /// Without a walk of the snapshot (other processes committed twice since it began, so that neither meta page is
    /// its own), the store-wide databases are listed all the same, from the main database's records: the same names
    /// and entries as with one (trial105 D4: `stats` left them out while other processes wrote).
    @Test func theStoreWideDatabasesAreListedWithoutAWalk() async throws {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.limits = StorageLimits(maxRecords: 50)
        configuration.clock = VirtualClock()  // No load timeout a loaded machine could reach.
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(contentsOf: (0..<80).map(Product.sample))
        _ = try await storage.fetch(Product.self, id: "none", policy: LoadPolicy(absentFor: .seconds(60))) { _ in nil }
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        let (walked, unwalked) = try maintenance.read { txn in
            let walk = try maintenance.environment.pageTotals(in: txn) { !$0.hasPrefix("r.") }
            #expect(walk != nil)
            return (
                try StoreMaintenance.storeWideDatabases(walk: walk, txn: txn),
                try StoreMaintenance.storeWideDatabases(walk: nil, txn: txn)
            )
        }
        #expect(Set(walked.map(\.name)).isSuperset(of: ["counts", "leases"]))
        #expect(unwalked.map(\.name) == walked.map(\.name))
        #expect(unwalked.map(\.entries) == walked.map(\.entries))
    }

    @Test func theDatabasesPagesIncludeTheSubTreesOfSortedDuplicates() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(contentsOf: (0..<6_000).map(Product.sample))
        let figures = try await StoreMaintenance(directory: storage.core.directory).statistics()

        let path = storeFilesDirectory(directory).appendingPathComponent("data.mdb").path
        let (walk, _) = try walkDataFile(path)
        #expect(walk.problems.isEmpty, "\(walk.problems)")
        let typeDatabases = walk.pageTotals.filter { name, _ in
            ["r.", "u.", "e.", "s.", "i."].contains { name.hasPrefix($0) }
        }
        let walked = typeDatabases.values.reduce(0) { $0 + Int($1.branch + $1.leaf + $1.overflow) }
        let reported = figures.databases.filter { $0.name.hasPrefix("Product/") }.reduce(0) { $0 + $1.pages }
        #expect(reported == walked)
        let category = try #require(figures.databases.first { $0.name == "Product/index category" })
        #expect(category.pages > 3, "2,000 ids under each of 3 keys fill more than a page each")
        // Every page of the file is in one line or free: the store-wide databases (counts, leases, …) have
        // lines of their own, and the two meta pages are LMDB's.
        #expect(figures.databases.contains { $0.name == "counts" })
        let listed = figures.databases.reduce(0) { $0 + $1.pages }
        #expect(listed + figures.pages.free + 2 == figures.pages.used)
        // The totals are of every database, the store-wide ones included (they counted the types' alone).
        #expect(figures.pages.branch + figures.pages.leaf + figures.pages.overflow == listed)
    }
}
