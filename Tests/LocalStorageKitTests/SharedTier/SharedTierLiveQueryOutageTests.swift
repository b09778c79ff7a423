import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// A live query on an instance whose server goes away: it keeps its last result and goes on once the instance has
/// reconnected and caught up (trial91 #1: the first rerun during an outage or a stall ended the stream for good).
@Suite(
    .enabled(if: RedisTestServer.binary != nil, "redis-server is not installed (scripts/ensure-dependencies.sh redis)"))
struct SharedTierLiveQueryOutageTests {
    @Test(.timeLimit(.minutes(5)), arguments: [FetchOptions.Scope.shared, .local])
    func aLiveQueryOutlivesAnOutage(scope: FetchOptions.Scope) async throws {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        let namespace = "outage-\(scope)"
        let a = try await sharedStore(server.configuration(namespace: namespace))
        var tier = server.configuration(namespace: namespace)
        tier.maxStaleness = .seconds(1)
        let clock = VirtualClock()
        let b = try await sharedStore(tier, clock: clock)
        try await b.save(StressRecord.make(id: "x", sequence: 1), expiration: .seconds(2))
        let results = Mutex<[[String]]>([])
        let ending = Mutex<String?>(nil)
        let watching = Task {
            do {
                for try await rows in b.updates(of: StressRecord.self, options: FetchOptions(scope: scope)) {
                    results.withLock { $0.append(rows.map(\.id).sorted()) }
                }
                ending.withLock { $0 = "finished" }
            } catch {
                ending.withLock { $0 = "\(error)" }
            }
        }
        defer { watching.cancel() }
        #expect(try await waitUntil { results.withLock { $0.last } == ["x"] })

        await server.killOffThePool()
        #expect(try await waitUntil { b.sharedTier?.phase == .down })
        // `x` expires and the query reruns, long after the instance last heard from the server: the rerun fails.
        clock.advance(by: .seconds(3))
        #expect(try await waitUntil { b.core.liveQueries.suspensionCount >= 1 || ending.withLock { $0 != nil } })
        #expect(ending.withLock { $0 } == nil)

        try await server.restart()
        try await a.save(StressRecord.make(id: "y", sequence: 1))
        // The instance reconnects (its delays run on its clock), catches up, and the query reruns.
        #expect(
            try await waitUntil {
                clock.advance(by: .milliseconds(100))
                return results.withLock { $0.last?.contains("y") == true } || ending.withLock { $0 != nil }
            })
        #expect(ending.withLock { $0 } == nil)
        #expect(results.withLock { $0.last?.contains("y") } == true)
    }
}
