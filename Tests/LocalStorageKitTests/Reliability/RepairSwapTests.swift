import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// `verify --repair` swaps a salvaged data file in while apps may open the store.
@Suite struct RepairSwapTests {
    #if os(Linux)
    /// Whether process `pid` waits for a lock (a `->` line of `/proc/locks`).
    private func waitsForALock(_ pid: Int32) -> Bool {
        guard let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return false }
        return locks.split(separator: "\n").contains { line in
            line.contains("->") && line.split(separator: " ").contains(Substring(String(pid)))
        }
    }

    /// A process that opened the store after the repair's last in-use check mapped the old file, which the
    /// swap renamed away: its save went into `data.mdb.damaged` and was lost. The repair now holds LMDB's lock
    /// from that check through the swap, so the process waits and then writes to the new file.
    @Test(.timeLimit(.minutes(5))) func aProcessOpeningDuringTheSwapWritesToTheNewFile() async throws {
        let directory = temporaryDirectory()
        let configuration = diskConfiguration(directory)
        try await withStore(configuration) { storage async throws in
            try await storage.save(contentsOf: (0..<20).map { StressRecord.make(id: "r\($0)", sequence: $0) })
        }
        let opener = Mutex<HelperProcess?>(nil)
        let report = try await StoreMaintenance.salvage(directory: configuration.storeDirectory, encryption: nil) {
            step in
            guard step == "locked" else { return }
            do {
                let child = try HelperProcess(["save-loop", directory.path, "full", "1", "late"])
                opener.withLock { $0 = child }
                // Either it saved already (into the file being replaced), or it waits for the lock.
                let settled = await eventually {
                    child.lines.contains("done") || waitsForALock(child.processIdentifier)
                }
                #expect(settled)
            } catch {
                Issue.record("the helper did not start: \(error)")
            }
        }
        #expect(report.salvaged == 20)
        let child = try #require(opener.withLock { $0 })
        #expect(await child.waitForExit() == 0, "\(child.lines)")
        try await withStore(configuration) { storage async throws in
            #expect(try await storage.fetch(StressRecord.self, id: "late-0") != nil)
            #expect(try await storage.count(StressRecord.self) == 21)
        }
    }
    #endif
}
