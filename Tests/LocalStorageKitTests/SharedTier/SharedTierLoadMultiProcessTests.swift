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
