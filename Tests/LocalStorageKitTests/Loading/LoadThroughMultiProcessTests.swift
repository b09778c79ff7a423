import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loads through the cache by several processes on one store (the `LocalStorageStress load` helper).
@Suite struct LoadThroughMultiProcessTests {
    /// The lines the loaders of every process appended to `file`.
    private func loads(in file: URL) -> [String] {
        guard let data = FileManager.default.contents(atPath: file.path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    private func configuration(_ directory: URL) -> LocalStorageConfiguration {
        var configuration = diskConfiguration(directory)
        configuration.externalChangePollInterval = .milliseconds(20)
        return configuration
    }

    /// Fetches `id` through the cache (a long `loadTimeout`: only the other process's outcome may answer), with a
    /// loader that returns a record; returns what the fetch got and how many times the loader ran.
    private func fetchLoadingIfAsked(
        _ id: String, from storage: LocalStorage
    ) async throws -> (found: StressRecord?, loads: Int) {
        let gate = LoadGate(open: true)
        let found = try await storage.fetch(StressRecord.self, id: id, policy: LoadPolicy(loadTimeout: .seconds(600))) {
            id in
            await gate.pass()
            return StressRecord.make(id: id, sequence: 7)
        }
        return (found, gate.loads)
    }

    @Test func fourProcessesOf250CallersLoadOnceInAll() async throws {
        let directory = temporaryDirectory()
        let loadFile = directory.appendingPathComponent("loads.txt")
        // Create the store first, so that the helpers do not race to create it.
        try await withStore(configuration(directory)) { _ in }
        let helpers = try (0..<4).map { _ in
            try HelperProcess(["load", directory.path, "shared-id", "250", loadFile.path, "300"])
        }
        for helper in helpers {
            let done = try await helper.waitForLine("done", timeout: .seconds(120)) {
                $0.hasPrefix("done") || $0.hasPrefix("error")
            }
            #expect(done == "done 250")
        }
        for helper in helpers { await helper.waitForExit() }
        #expect(loads(in: loadFile).count == 1)
        let storage = try LocalStorage(configuration: configuration(directory))
        #expect(try await storage.count(StressRecord.self) == 1)
    }

    @Test func aWaiterInAnotherProcessGetsTheHoldersRecordWithoutLoading() async throws {
        let directory = temporaryDirectory()
        let loadFile = directory.appendingPathComponent("loads.txt")
        let storage = try LocalStorage(configuration: configuration(directory))
        let helper = try HelperProcess(["load", directory.path, "r-1", "1", loadFile.path, "500"])
        try await helper.waitForLine("loading") { $0 == "loading" }
        let gate = LoadGate(open: true)
        let found = try await storage.fetch(StressRecord.self, id: "r-1") { id in
            await gate.pass()
            return StressRecord.make(id: id, sequence: -1)
        }
        #expect(gate.loads == 0)
        #expect(found?.sequence == Int(helper.processIdentifier))
        #expect(try await helper.waitForLine("done") { $0.hasPrefix("done") } == "done 1")
    }

    @Test func aLoaderKilledMidLoadIsTakenOver() async throws {
        let directory = temporaryDirectory()
        let loadFile = directory.appendingPathComponent("loads.txt")
        let storage = try LocalStorage(configuration: configuration(directory))
        let helper = try HelperProcess(["load", directory.path, "r-2", "5", loadFile.path, "hang"])
        try await helper.waitForLine("loading") { $0 == "loading" }
        let gate = LoadGate(open: true)
        // A long timeout: only the holder's death, seen on this host, lets these callers take over.
        let policy = LoadPolicy(loadTimeout: .seconds(600))
        let callers = (0..<10).map { _ in
            Task {
                try await storage.fetch(StressRecord.self, id: "r-2", policy: policy) { id in
                    await gate.pass()
                    return StressRecord.make(id: id, sequence: 7)
                }
            }
        }
        try await eventually("the callers waiting") { storage.core.loads.waiterCount == 10 }
        #expect(gate.loads == 0)
        await helper.kill()
        for caller in callers { #expect(try await caller.value?.sequence == 7) }
        #expect(gate.loads == 1)
        #expect(loads(in: loadFile).count == 1)
    }

    /// A delete that voids another process's load answers the callers here waiting on it with nil, as it does
    /// the holder's: they do not load again and store what they loaded over the delete (trial86 #1).
    ///
    /// Also when a clear and the delete (which finds no record) come in one commit: the clear, voiding at the
    /// commit's end, kept the marker the delete wrote before it (review-86 #1); and when a save and a delete of the
    /// id come in one commit (review-86 #10: the save's void removed the lease, the delete found none).
    @Test(arguments: ["delete", "clear and delete", "save and delete"])
    func aDeleteThatVoidsAnotherProcesssLoadAnswersItsWaitersHereWithNil(writes: String) async throws {
        let directory = temporaryDirectory()
        let loadFile = directory.appendingPathComponent("loads.txt")
        let storage = try LocalStorage(configuration: configuration(directory))
        let helper = try HelperProcess(["load", directory.path, "r-4", "1", loadFile.path, "hang"])
        try await helper.waitForLine("loading") { $0 == "loading" }
        let gate = LoadGate(open: true)
        let policy = LoadPolicy(loadTimeout: .seconds(600))
        let callers = (0..<5).map { _ in
            Task {
                try await storage.fetch(StressRecord.self, id: "r-4", policy: policy) { id in
                    await gate.pass()
                    return StressRecord.make(id: id, sequence: 7)
                }
            }
        }
        try await eventually("the callers waiting on the helper's lease") {
            storage.core.loads.waiterCount == 5 && storage.core.leaseWaits.load(ordering: .relaxed) == 1
        }
        switch writes {
        case "clear and delete":
            try await storage.write { tx in
                try tx.deleteAll(StressRecord.self)
                try tx.delete(StressRecord.self, id: "r-4")
            }
        case "save and delete":
            try await storage.write { tx in
                try tx.save(StressRecord.make(id: "r-4", sequence: 3))
                try tx.delete(StressRecord.self, id: "r-4")
            }
        default:
            try await storage.delete(StressRecord.self, id: "r-4")
        }
        for caller in callers { #expect(try await caller.value == nil) }
        #expect(gate.loads == 0)
        await helper.kill()
        #expect(try await storage.count(StressRecord.self) == 0)
    }

    /// Runs `body` at each step of every load through `storage` (``LoadFlights/stepsForTests``); what it throws is
    /// recorded as an issue.
    private func onSteps(of storage: LocalStorage, _ body: @escaping @Sendable (LoadFlights.Step) async throws -> Void)
    {
        storage.core.loads.stepsForTests.withLock {
            $0 = { step in
                do {
                    try await body(step)
                } catch {
                    Issue.record(error)
                }
            }
        }
    }

    /// A caller that saw another process's lease held gets that load's nil, also when the load ended (a nil without
    /// `absentFor`, which ends as it is written) before the caller's flight looked again (review-105 F9: it loaded).
    @Test func aCallerWhoSawAnotherProcesssLeaseGetsItsNilWhenItEndsBeforeTheFlightLooks() async throws {
        let directory = temporaryDirectory()
        let loadFile = directory.appendingPathComponent("loads.txt")
        let storage = try LocalStorage(configuration: configuration(directory))
        let helper = try HelperProcess(
            ["load", directory.path, "r-5", "1", loadFile.path, "nil-on-input"], withInput: true)
        try await helper.waitForLine("loading") { $0 == "loading" }
        let finished = Mutex<String?>(nil)
        onSteps(of: storage) { step in
            guard step == .afterFirstLook, finished.withLock({ $0 }) == nil else { return }
            let reply = try await helper.ask("finish")
            finished.withLock { $0 = reply }
        }
        let (found, loaderRuns) = try await fetchLoadingIfAsked("r-5", from: storage)
        #expect(finished.withLock { $0 } == "done 0")
        #expect(found == nil)
        #expect(loaderRuns == 0)
        #expect(loads(in: loadFile).count == 1)
        await helper.waitForExit()
    }

    /// A flight refused a lease because another process had just taken it gets that load's nil, also when the load
    /// (without `absentFor`) ended before the flight looked again (review-107 A2: the flight had never seen the lease
    /// held in a look, took the ended nil for an old one, and loaded).
    @Test func aFlightRefusedByAnotherProcesssLeaseGetsItsNil() async throws {
        let directory = temporaryDirectory()
        let loadFile = directory.appendingPathComponent("loads.txt")
        let storage = try LocalStorage(configuration: configuration(directory))
        let helper = Mutex<HelperProcess?>(nil)
        let finished = Mutex<String?>(nil)
        onSteps(of: storage) { step in
            switch step {
            case .beforeTakingLease where helper.withLock({ $0 }) == nil:
                // The other process takes the lease between this flight's look and its lease.
                let other = try HelperProcess(
                    ["load", directory.path, "r-6", "1", loadFile.path, "nil-on-input"], withInput: true)
                helper.withLock { $0 = other }
                try await other.waitForLine("loading") { $0 == "loading" }
            case .afterRefusal where finished.withLock({ $0 }) == nil:
                // And its load finds nothing before this flight looks again.
                let other = try #require(helper.withLock { $0 })
                let reply = try await other.ask("finish")
                finished.withLock { $0 = reply }
            default: break
            }
        }
        let (found, loaderRuns) = try await fetchLoadingIfAsked("r-6", from: storage)
        #expect(finished.withLock { $0 } == "done 0")
        #expect(found == nil)
        #expect(loaderRuns == 0)
        await helper.withLock { $0 }?.waitForExit()
    }

    @Test func aWriteByAnotherProcessVoidsTheLease() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: configuration(directory))
        let gate = LoadGate()
        let caller = Task {
            // Starting the other process can take long on a loaded machine: the load must not time out meanwhile.
            try await storage.fetch(StressRecord.self, id: "r-3", policy: LoadPolicy(loadTimeout: .seconds(600))) {
                id in
                await gate.pass()
                return StressRecord.make(id: id, sequence: 1)
            }
        }
        try await gate.waitForLoad()
        let writer = try HelperProcess(["overwrite", directory.path], withInput: true)
        try await writer.waitForLine("ready") { $0 == "ready" }
        #expect(try await writer.ask("save r-3 99") == "ok")
        writer.closeInput()
        await writer.waitForExit()
        gate.open()
        #expect(try await caller.value?.sequence == 99)
        #expect(try await storage.fetch(StressRecord.self, id: "r-3")?.sequence == 99)
    }
}
