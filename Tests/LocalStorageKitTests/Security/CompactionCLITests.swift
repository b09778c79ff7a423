import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// `localstorage stats` shows the free fraction and each database's pages; `localstorage compact` without
/// `--output` compacts in place when no process has the store open, and reports the sizes.
@Suite struct CompactionCLITests {
    @Test func statsShowTheFreeFractionAndEachDatabase() async throws {
        var store = ShrinkingStore(seed: 41)
        try await store.grow(2000, prefix: "a", thenDelete: 0.9)
        let json = try await CLIResult.run(["stats", "--json", "--store", store.files.path], environment: nil)
        #expect(json.status == 0, "\(json.stderr)")
        let figures = try JSONDecoder().decode(StoreStatistics.self, from: Data(json.stdout.utf8))
        #expect(figures.freeFraction > 0.5 && figures.freeFraction < 1, "\(figures.freeFraction)")
        let records = try #require(figures.databases.first { $0.name == "StressRecord/records" })
        #expect(records.entries == store.model.count)
        #expect(records.depth >= 1 && records.pages >= 1)
        #expect(figures.databases.contains { $0.name == "StressRecord/index group" && $0.entries == store.model.count })
        #expect(figures.databases.contains { $0.name == "(free pages)" && $0.entries > 0 })

        let plain = try await CLIResult.run(["stats", "--store", store.files.path], environment: nil)
        let percent = Int((figures.freeFraction * 100).rounded())
        #expect(plain.stdout.contains("Free      \(percent)% of the file is free pages"), "\(plain.stdout)")
        #expect(plain.stdout.contains("StressRecord/records"))
    }

    @Test func compactInPlaceGivesTheFreePagesBackAndKeepsEveryRecord() async throws {
        var store = ShrinkingStore(seed: 43)
        var configuration = store.configuration()
        configuration.filePermissions = 0o660
        try await withStore(configuration) { storage in try await storage.save(StressRecord.make(id: "x", sequence: 1))
        }
        store.model["x"] = StressRecord.make(id: "x", sequence: 1)
        try await store.grow(3000, prefix: "a", thenDelete: 0.9)
        let before = store.dataFileIdentity

        // Refused while another process has the store open; the store is untouched.
        let app = try HelperProcess(["overwrite", store.directory.path], withInput: true)
        try await app.waitForLine("ready") { $0 == "ready" }
        let busy = try await CLIResult.run(["compact", "--store", store.directory.path], environment: nil)
        #expect(busy.status == 1)
        #expect(busy.stderr.contains("another process"), "\(busy.stderr)")
        // One sentence: the path where it goes, the reason, then what to do (trial88 #6).
        #expect(
            busy.stderr.contains("cannot compact in place the store at \(store.directory.path)"),
            "\(busy.stderr)")
        #expect(busy.stderr.contains("has the store open; `compact --output DIR`"), "\(busy.stderr)")
        #expect(store.dataFileIdentity == before)
        await app.kill()

        let result = try await CLIResult.run(["compact", "--json", "--store", store.directory.path], environment: nil)
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(CompactInPlaceReport.self, from: Data(result.stdout.utf8))
        #expect(report.originalBytes == before.size)
        #expect(report.compactedBytes == store.dataFileIdentity.size)
        #expect(report.compactedBytes * 3 < report.originalBytes)
        #expect(report.freeFraction > 0.5)
        #expect(StoreFileModes.mode(of: store.dataFile.path) == 0o660)
        try await withStore(store.configuration()) { storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        let plain = try await CLIResult.run(["compact", "--store", store.directory.path], environment: nil)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout.hasPrefix("Compacted \(store.files.path) in place: "), "\(plain.stdout)")
    }
}
