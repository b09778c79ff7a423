import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// Loads through the cache by processes on different stores sharing one namespace of the suite's server (the
/// `LocalStorageStress load` helper with a shared tier).
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierLoadMultiProcessTests {
    let namespace = "lmp-\(UUID().uuidString)"

    /// The lines the loaders of every process appended to `file`.
    private func loads(in file: URL) -> [String] {
        guard let data = FileManager.default.contents(atPath: file.path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// The helper's arguments: CALLERS tasks on a store of its own loading `id` (MILLIS or `hang`), with a
    /// load timeout (the lease's time on the server) of `timeout` ms.
    private func loader(_ id: String, callers: Int, file: URL, delay: String, timeout: Int) throws -> [String] {
        let port = try #require(SharedTestServer.port)
        return [
            "load", temporaryDirectory().path, id, "\(callers)", file.path, delay, "\(port)", namespace, "\(timeout)",
        ]
    }

    @Test func twoProcessesOnTwoStoresLoadOnceInAll() async throws {
        let loadFile = temporaryDirectory().appendingPathComponent("loads.txt")
        let helpers = try (0..<2).map { _ in
            try HelperProcess(loader("shared-id", callers: 250, file: loadFile, delay: "1000", timeout: 300_000))
        }
        for helper in helpers {
            let done = try await helper.waitForLine("done", timeout: .seconds(300)) {
                $0.hasPrefix("done") || $0.hasPrefix("error")
            }
            #expect(done == "done 250")
        }
        for helper in helpers { await helper.waitForExit() }
        #expect(loads(in: loadFile).count == 1)
    }

    /// Two processes on one store, one holding the store's lease while it waits on another instance's lease on the
    /// server, the other waiting on the first: when the other instance's load finds nothing, both get nil and nobody
    /// loads again (review-107 A1: the first gave its lease back without remembering the nil, so the second found no
    /// entry, and loaded).
    @Test func aNilFromAnotherInstanceAnswersTheProcessesWaitingOnThisStoresLease() async throws {
        let loadFile = temporaryDirectory().appendingPathComponent("loads.txt")
        let other = try HelperProcess(
            loader("r-nil", callers: 1, file: loadFile, delay: "nil-on-input", timeout: 600_000), withInput: true)
        try await other.waitForLine("the other instance loading") { $0.hasPrefix("loading") }
        let directory = temporaryDirectory()
        let port = try #require(SharedTestServer.port)
        let holder = try HelperProcess([
            "load", directory.path, "r-nil", "1", loadFile.path, "0", "\(port)", namespace, "600000",
        ])
        try await holder.waitForLine("ready") { $0 == "ready" }
        let storage = try await diskSharedStore(
            SharedTestServer.configuration(namespace: namespace), directory: directory)
        // The helper on this store holds its lease (and waits on the other instance's on the server).
        let schema = try await storage.core.schema(for: StressRecord.self)
        let leases = try storage.local.leaseBook()
        let leaseKey = LeaseBook.key(type: schema.number, id: Array("r-nil".utf8))
        let leaseTaken = await eventually {
            try storage.core.environment.read { try leases.entry(leaseKey, txn: $0) }?.owner.pid
                == holder.processIdentifier
        }
        try #require(leaseTaken, "the helper's lease on this store")
        let gate = LoadGate(open: true)
        let policy = LoadPolicy(loadTimeout: .seconds(600))
        let caller = Task {
            try await storage.fetch(StressRecord.self, id: "r-nil", policy: policy) { id in
                await gate.pass()
                return StressRecord.make(id: id, sequence: 7)
            }
        }
        try await eventually("the caller waiting on the helper's lease") {
            storage.core.leaseWaits.load(ordering: .relaxed) >= 1
        }
        #expect(try await other.ask("finish") == "done 0")
        #expect(try await caller.value == nil)
        #expect(gate.loads == 0)
        #expect(try await holder.waitForLine("done") { $0.hasPrefix("done") || $0.hasPrefix("error") } == "done 0")
        #expect(loads(in: loadFile).count == 1)
        await other.waitForExit()
        await holder.waitForExit()
    }

    @Test func aLoaderKilledMidLoadIsTakenOverByAnotherInstance() async throws {
        let loadFile = temporaryDirectory().appendingPathComponent("loads.txt")
        let storage = try await diskSharedStore(SharedTestServer.configuration(namespace: namespace))
        // The helper's lease lives fifteen seconds on the server (its loader checks that it holds one, which a
        // helper stalled past the lease's end on a loaded machine would not); this test's callers wait that out.
        let helper = try HelperProcess(loader("r-killed", callers: 5, file: loadFile, delay: "hang", timeout: 15_000))
        let loading = try await helper.waitForLine("loading") { $0.hasPrefix("loading") }
        #expect(loading == "loading")
        await helper.kill()
        // The helper loaded at least once before it died: more than once when this machine held it past its
        // lease's fifteen seconds, and another of its callers took over (a full run under load did), which no
        // clock here can rule out. One load per id in a process is `twoProcessesOnTwoStoresLoadOnceInAll`'s.
        // Whatever the helper wrote by now is all it ever writes.
        let loadedByTheHelper = loads(in: loadFile).count
        #expect(loadedByTheHelper >= 1)
        let gate = LoadGate(open: true)
        // A long timeout here: only the end of the dead holder's lease on the server lets these callers load.
        let policy = LoadPolicy(loadTimeout: .seconds(600))
        let callers = (0..<10).map { _ in
            Task {
                try await storage.fetch(StressRecord.self, id: "r-killed", policy: policy) { id in
                    await gate.pass()
                    return StressRecord.make(id: id, sequence: 7)
                }
            }
        }
        for caller in callers { #expect(try await caller.value?.sequence == 7) }
        #expect(gate.loads == 1)
        #expect(loads(in: loadFile).count == loadedByTheHelper)
    }
}
