import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// A map that must grow for a batch of transactions grows; callers get `storageFull` only at `maxMapSize`.
@Suite struct MapGrowthTests {
    static func configuration(_ directory: URL) -> LocalStorageConfiguration {
        var configuration = diskConfiguration(directory)
        configuration.mapSize = 1 << 20
        configuration.maxMapSize = 1 << 30
        configuration.growsMapFromMapSize = true
        configuration.expirySweepInterval = nil
        return configuration
    }

    /// Thousands of one-record write transactions, and updates, from a 1 MiB map: the map grows many times,
    /// often in the group commit's own pages (its change log, the free list its commit saves) rather than
    /// in a transaction's writes. None fails, before and after a reopen (which starts without headroom), and
    /// each body runs once.
    @Test func writeTransactionsGrowTheMapInsteadOfFailing() async throws {
        let directory = temporaryDirectory()
        let text = String(repeating: "x", count: 400)
        let runs = CallCounter()
        for round in 0..<2 {
            let storage = try LocalStorage(configuration: Self.configuration(directory))
            for index in 0..<3_000 {
                let id = "n\(round)-\(index)"
                try await storage.write { tx in
                    runs.increment()
                    try tx.save(Note(id: id, text: text))
                }
                if index % 10 == 0 {
                    let updated = try await storage.update(Note.self, id: id) { $0.text += "!" }
                    #expect(updated.text.hasSuffix("!"))
                }
            }
            #expect(try await storage.count(Note.self) == 3_000 * (round + 1))
        }
        // The map grows ahead of each batch while it has less than an eighth of room left: no body of a few
        // hundred bytes met its end, so each ran once.
        #expect(runs.value == 6_000)
    }

    struct Refused: Error {}

    /// Updates whose `mutate` throws, in the same group commits as writes that make the map grow: a batch
    /// replayed after its own pages met the end of the map runs again only the requests that had not failed, so
    /// every `mutate` runs exactly once. (The map's growth ahead of each batch is turned off: with it, batches
    /// this small never meet the end of the map.)
    @Test func aReplayedBatchNeverRunsAFailedMutateAgain() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(temporaryDirectory()))
        storage.core.writer.growsAheadOfClosures.store(false, ordering: .relaxed)
        try await storage.save(contentsOf: (0..<64).map { Note(id: "u\($0)", text: "") })
        let calls = CallCounter()
        let updates = CallCounter()
        let text = String(repeating: "y", count: 600)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for index in 0..<500 {
                        try await storage.write { tx in try tx.save(Note(id: "w\(worker)-\(index)", text: text)) }
                    }
                }
                group.addTask {
                    for index in 0..<500 {
                        updates.increment()
                        do {
                            _ = try await storage.update(Note.self, id: "u\((worker * 500 + index) % 64)") { _ in
                                calls.increment()
                                throw Refused()
                            }
                            Issue.record("an update whose mutate throws succeeded")
                        } catch is Refused {
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(calls.value == updates.value)
    }

    /// A `write` body whose own writes are many times `mapSize` runs exactly once, as API.md says: the store maps
    /// the whole of `maxMapSize` when it opens, so nothing under the body has to end for the map to grow (the map
    /// grew from `mapSize` before, and the body met its end and ran again: 3 times for 300,000 products). The file
    /// grows with the data, not with the map.
    @Test func aBodyWhoseWritesPassTheInitialMapManyTimesRunsOnce() async throws {
        var configuration = diskConfiguration(temporaryDirectory())
        configuration.mapSize = 1 << 20
        let storage = try LocalStorage(configuration: configuration)
        let runs = CallCounter()
        let text = String(repeating: "z", count: 1_000)
        try await storage.write { tx in
            runs.increment()
            for index in 0..<20_000 { try tx.save(Note(id: "n\(index)", text: text)) }
        }
        #expect(runs.value == 1)
        #expect(try await storage.count(Note.self) == 20_000)
        let statistics = try await storage.statistics()
        #expect(statistics.mapUsedBytes > 16 << 20)
        let file = try FileManager.default.attributesOfItem(
            atPath: storage.core.directory.appendingPathComponent("data.mdb").path)
        #expect((file[.size] as? Int ?? .max) < 2 * statistics.mapUsedBytes)
    }

    /// In a store whose map grows from `mapSize`, a `write` body whose writes meet the end of the map runs again
    /// once the map grew, whether it let the `storageFull` it met through or turned it into its own error (which
    /// it threw only because the map had to grow), and commits; a first version of the once-only rule at
    /// `maxMapSize` failed both with their first error.
    @Test func aBodyThatMetTheEndOfAGrowingMapRunsAgainAndCommits() async throws {
        let storage = try LocalStorage(configuration: Self.configuration(temporaryDirectory()))
        storage.core.writer.growsAheadOfClosures.store(false, ordering: .relaxed)
        let text = String(repeating: "g", count: 1_000)
        let propagating = CallCounter()
        try await storage.write { tx in
            propagating.increment()
            for index in 0..<1_500 { try tx.save(Note(id: "p\(index)", text: text)) }
        }
        #expect(propagating.value >= 2)
        let converting = CallCounter()
        try await storage.write { tx in
            converting.increment()
            do {
                for index in 0..<3_000 { try tx.save(Note(id: "c\(index)", text: text)) }
            } catch LocalStorageError.storageFull {
                throw Refused()
            }
        }
        #expect(converting.value >= 2)
        #expect(try await storage.count(Note.self) == 4_500)
    }

    /// `maxMapSize` below `mapSize` (64 MiB by default) is still the limit: the map started at `mapSize` and never
    /// had to grow, so sixty 100 KB records went into a store limited to 2 MiB (trial83 F2).
    @Test(arguments: [false, true])
    func aGrowthLimitBelowTheInitialMapHolds(growsFromMapSize: Bool) async throws {
        var configuration = diskConfiguration(temporaryDirectory())
        configuration.mapSize = 10 << 20
        configuration.maxMapSize = 2 << 20
        configuration.growsMapFromMapSize = growsFromMapSize
        configuration.expirySweepInterval = nil
        let storage = try LocalStorage(configuration: configuration)
        let text = String(repeating: "b", count: 100_000)
        var saved = 0
        do {
            for index in 0..<60 {
                try await storage.save(Note(id: "b\(index)", text: text))
                saved += 1
            }
        } catch LocalStorageError.storageFull {
        }
        #expect(saved > 5 && saved < 40, "\(saved) records of 100 KB fitted in 2 MiB")
        #expect(try await storage.statistics().mapUsedBytes <= 2 << 20)
        try await storage.delete(Note.self, id: "b0")
        #expect(try await storage.count(Note.self) == saved - 1)
    }
}
