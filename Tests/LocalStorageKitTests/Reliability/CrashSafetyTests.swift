import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Crash safety: a helper process saves records one by one and prints each id once its save returned;
/// the test kills it with SIGKILL at random moments, reopens the store, and checks that every printed
/// id is there and `localstorage verify` finds the store clean. `CRASH_ROUNDS` raises the number of rounds
/// (`scripts/crash-test.sh` runs 25 per durability); the suite's default keeps CI fast.
@Suite(.serialized)
struct CrashSafetyTests {
    @Test(arguments: ["full", "relaxed", "none"])
    func killedSaverLosesNoAcknowledgedSave(durability: String) async throws {
        let rounds = environmentInteger("CRASH_ROUNDS", default: durability == "full" ? 6 : 2)
        let directory = temporaryDirectory()
        var generator = SplitMix64(seed: 0xC0FFEE &+ UInt64(durability.utf8.count))
        var acknowledged = Set<String>()
        var lost = 0
        var unclean = 0
        for round in 0..<rounds {
            let helper = try HelperProcess(["save-loop", directory.path, durability, "1000000000", "r\(round)"])
            try await helper.waitForLine("ready") { $0 == "ready" }
            // Once a few saves were acknowledged (an event, however slow the machine), then any moment:
            // mid-save, mid-commit, mid-growth of the map, between saves.
            let acknowledgements = Int.random(in: 2...40, using: &generator)
            try await waitUntil("\(acknowledgements) saves are acknowledged", seconds: 60) {
                helper.lines.count > acknowledgements
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...100, using: &generator)))
            await helper.kill()
            acknowledged.formUnion(helper.lines.filter { $0 != "ready" && $0 != "done" })

            let missing = try await withStore(diskConfiguration(directory)) { storage in
                acknowledged.subtracting(try await storage.fetch(StressRecord.self).map(\.id))
            }
            // The CLI's verify, in its own process, as an operator would run it after a crash.
            let verify = try await verifyWithTheCLI(directory)
            #expect(missing.isEmpty, "round \(round): acknowledged saves lost: \(missing.sorted().prefix(10))")
            #expect(verify.status == 0, "round \(round): \(verify.output)")
            lost += missing.count
            unclean += verify.status == 0 ? 0 : 1
        }
        #expect(acknowledged.count > rounds, "the helper should have saved records before most kills")
        reportFigure(
            "crash durability=\(durability) rounds=\(rounds) acknowledged=\(acknowledged.count) "
                + "lost=\(lost) unclean=\(unclean)")
    }

    // MARK: - What a system crash may lose

    /// `.relaxed` (`MDB_NOMETASYNC`) flushes the data of each commit but not its meta page, which the next
    /// commit's flush carries. A system crash can therefore lose the newest meta page write, never more:
    /// simulated here by putting back the meta page the last commit overwrote.
    @Test func relaxedLosesAtMostTheLastCommitWhenTheMetaPageWriteIsLost() async throws {
        let directory = temporaryDirectory()
        let configuration = diskConfiguration(directory, durability: .relaxed)
        let data = storeFilesDirectory(directory).appendingPathComponent("data.mdb")
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        try await withStore(configuration) { storage in
            for n in 0..<50 {
                try await storage.save(StressRecord(id: "kept-\(n)", group: "a", sequence: n, blob: "kept"))
            }
        }
        let before = try Data(contentsOf: data).prefix(2 * pageSize)
        try await withStore(configuration) { storage in
            try await storage.save(StressRecord(id: "last", group: "b", sequence: 99, blob: "last commit"))
        }
        var after = try Data(contentsOf: data)
        let changed = (0..<2).filter { page in
            let range = (page * pageSize)..<((page + 1) * pageSize)
            return before[range] != after[range]
        }
        try #require(changed.count == 1, "the last save should have written exactly one meta page")
        let range = (changed[0] * pageSize)..<((changed[0] + 1) * pageSize)
        after.replaceSubrange(range, with: before[range])
        try after.write(to: data)

        try await withStore(configuration) { storage in
            #expect(try await storage.fetch(StressRecord.self, id: "last") == nil)
            #expect(try await storage.count(StressRecord.self) == 50)
            #expect(try await storage.count(StressRecord.self, matching: [.equals("group", "a")]) == 50)
            #expect(try await verifyProblems(storage).isEmpty)
            try await storage.save(StressRecord(id: "after", group: "c", sequence: 100, blob: "after"))
            #expect(try await storage.count(StressRecord.self) == 51)
        }
    }

    /// `.none` (`MDB_NOSYNC`) flushes nothing: a system crash loses whatever the OS had not written yet.
    /// When the file system keeps write order, what survives is an earlier commit, complete: simulated
    /// here by putting back the whole data file as it was at an earlier flush.
    @Test func noneLosesTheCommitsAfterTheLastFlushAndStaysConsistent() async throws {
        let directory = temporaryDirectory()
        let configuration = diskConfiguration(directory, durability: .none)
        let data = storeFilesDirectory(directory).appendingPathComponent("data.mdb")
        try await withStore(configuration) { storage in
            for n in 0..<40 {
                try await storage.save(StressRecord(id: "flushed-\(n)", group: "a", sequence: n, blob: "x"))
            }
        }
        let flushed = try Data(contentsOf: data)
        try await withStore(configuration) { storage in
            for n in 0..<40 {
                try await storage.save(StressRecord(id: "unflushed-\(n)", group: "b", sequence: n, blob: "y"))
            }
        }
        try flushed.write(to: data)
        try await withStore(configuration) { storage async throws in
            #expect(try await storage.count(StressRecord.self) == 40)
            #expect(try await storage.count(StressRecord.self, matching: [.equals("group", "b")]) == 0)
            #expect(try await verifyProblems(storage).isEmpty)
        }
    }
}
