import Foundation
import Testing

@testable import LocalStorageKit

/// Three processes (the `LocalStorageStress` helper in `shared` mode), each with its own local store on disk,
/// on one namespace of the suite's server.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierMultiProcessTests {
    @Test func threeProcessesSeeEachOthersWritesAndTheirLiveQueriesAgree() async throws {
        let port = try #require(SharedTestServer.port)
        let namespace = "mp-\(UUID().uuidString)"
        let helpers = try (0..<3).map { _ in
            try HelperProcess(["shared", temporaryDirectory().path, "\(port)", namespace], withInput: true)
        }
        for helper in helpers { try await helper.waitForLine("ready") { $0 == "ready" } }
        for helper in helpers { #expect(try await helper.ask("watch g1") == "ok") }

        // Each process saves its own records; every process reads every one.
        for (n, helper) in helpers.enumerated() {
            for k in 0..<5 { #expect(try await helper.ask("save p\(n)-\(k) g\(k % 2) \(n * 10 + k) 0") == "ok") }
        }
        for helper in helpers {
            for n in 0..<3 {
                for k in 0..<5 { #expect(try await helper.ask("get p\(n)-\(k)") == "sequence \(n * 10 + k)") }
            }
        }
        // A delete by one and an expiry written by another reach all three.
        #expect(try await helpers[1].ask("delete p0-1") == "ok")
        #expect(try await helpers[2].ask("save x g1 99 400") == "ok")
        #expect(try await helpers[0].ask("save p1-3 g1 14 0") == "ok")

        let expected = "live p0-3,p1-1,p1-3,p2-1,p2-3"
        for helper in helpers {
            let agreed = try await waitUntil { try await helper.ask("live") == expected }
            let last = try await helper.ask("live")
            #expect(agreed, "live results: \(last)")
        }
        for helper in helpers {
            #expect(try await helper.ask("get p0-1") == "nil")
            #expect(try await helper.ask("get x") == "nil")
            #expect(try await helper.ask("get p1-3") == "sequence 14")
            #expect(try await helper.ask("count g1") == "count 5")
        }
        for helper in helpers {
            helper.closeInput()
            #expect(await helper.waitForExit() == 0)
        }
    }
}
