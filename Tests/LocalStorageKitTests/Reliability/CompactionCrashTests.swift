import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// A process killed with SIGKILL at any moment of a compaction at open leaves a store that opens with every
/// committed record: 20 rounds of grow, shrink, and a helper process that opens the store compacting and is
/// killed after one of the compaction's stages (it kills itself there), or at a random moment after it began.
@Suite(.serialized)
struct CompactionCrashTests {
    static let stages = ["locked", "created", "copied", "synced", "renamed", "folder synced"]

    @Test func killedCompactionLosesNothingCommitted() async throws {
        let rounds = environmentInteger("COMPACTION_CRASH_ROUNDS", default: 20)
        var store = ShrinkingStore(seed: 0xDEAD_C0DE)
        var random = SplitMix64(seed: 0xC0FF_EE00)
        var leftoversSeen = 0
        var swapped = 0
        for round in 0..<rounds {
            try await store.grow(300 + random.below(600), prefix: "r\(round)", thenDelete: 0.85)
            let before = store.dataFileIdentity
            // Rounds 0-5 and 7-12… stop at each stage in turn; every seventh is killed from here at random.
            let stage = round % 7 < Self.stages.count ? Self.stages[round % 7] : nil
            let helper = try HelperProcess(["compact-open", store.directory.path, "0.3"] + (stage.map { [$0] } ?? []))
            if stage == nil {
                try await helper.waitForLine("the compaction to begin") { $0.hasPrefix("step") || $0 == "opened" }
                try await Task.sleep(for: .microseconds(random.below(20_000)))
                await helper.kill()
            } else {
                await helper.waitForExit()
                #expect(helper.lines.last == "step \(stage ?? "")", "round \(round): \(helper.lines)")
            }
            if FileManager.default.fileExists(atPath: store.leftover.path) { leftoversSeen += 1 }
            if store.dataFileIdentity.inode != before.inode { swapped += 1 }

            let differences = try await withStore(store.configuration()) { storage async throws in
                try await store.differences(storage)
            }
            #expect(
                differences.isEmpty,
                "round \(round) (killed after \(stage ?? "a random delay")): \(differences.prefix(5))")
            #expect(!FileManager.default.fileExists(atPath: store.leftover.path), "round \(round): the copy stayed")
        }
        #expect(leftoversSeen > 0, "some kills should have left a copy behind")
        #expect(swapped > 0, "some kills should have come after the swap")
        // And a compaction that is not killed finishes the job.
        try await withStore(store.configuration(compaction: .onOpen(whenFreeFractionExceeds: 0.3))) {
            storage async throws in
            #expect(try await store.differences(storage).isEmpty)
        }
        reportFigure("compaction crash rounds=\(rounds) leftovers=\(leftoversSeen) swapped=\(swapped)")
    }
}
