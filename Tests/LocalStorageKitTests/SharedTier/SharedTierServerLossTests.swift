import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// What an instance does when its server goes away or loses its data, each test on a server of its own.
@Suite(
    .enabled(if: RedisTestServer.binary != nil, "redis-server is not installed (scripts/ensure-dependencies.sh redis)"))
struct SharedTierServerLossTests {
    /// A live query keeps its last result and goes on once the instance has reconnected and caught up (trial91 #1:
    /// the first rerun during an outage or a stall ended the stream for good).
    @Test(.timeLimit(.minutes(5)), arguments: [FetchOptions.Scope.shared, .local])
    func aLiveQueryOutlivesAnOutage(scope: FetchOptions.Scope) async throws {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        let namespace = "outage-\(scope)"
        let a = try await sharedStore(server.configuration(namespace: namespace))
        var tier = server.configuration(namespace: namespace)
        tier.maxStaleness = .seconds(1)
        let clock = VirtualClock()
        let logger = CapturingLogger()
        let b = try await sharedStore(tier, logger: logger, clock: clock)
        let bTier = try #require(b.sharedTier)
        // The server expires `x` by its own clock: a minute, long enough for a loaded machine.
        try await b.save(StressRecord.make(id: "x", sequence: 1), expiration: .seconds(60))
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
        #expect(try await waitUntil { results.withLock { $0.last } == ["x"] }, "first")

        await server.killOffThePool()
        #expect(try await waitUntil { b.sharedTier?.phase == .down }, "down")
        // `x` expires and the query reruns, long after the instance last heard from the server: the rerun fails.
        clock.advance(by: .seconds(61))
        #expect(
            try await waitUntil {
                (bTier.state.withLock { $0.servableWaits }) >= 1 || ending.withLock { $0 != nil }
            }, "suspended")
        #expect(ending.withLock { $0 } == nil)

        try await server.restart()
        try await a.save(StressRecord.make(id: "y", sequence: 1))
        // The instance reconnects (its delays run on its clock), catches up, and the query reruns.
        #expect(
            try await waitUntil {
                clock.advance(by: .milliseconds(100))
                return results.withLock { $0.last?.contains("y") == true } || ending.withLock { $0 != nil }
            },
            """
            results \(results.withLock { $0 }), phase \(String(describing: b.sharedTier?.phase)), \
            waits \(bTier.state.withLock { $0.servableWaits }), reruns \(b.core.liveQueries.rerunCount)
            """)
        #expect(ending.withLock { $0 } == nil)
        #expect(results.withLock { $0.last?.contains("y") } == true)
        // The wait and the end of it are logged (a stream that merely stops changing says nothing).
        let lines = logger.all
        #expect(lines.contains { $0.hasPrefix("warning A live query keeps its last result") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("info A live query runs again") }, "\(lines)")
    }

    /// A load whose lease the server lost with its data (`FLUSHALL`) while the loader ran, and which finds no record
    /// there either, returns what the loader returned (its callers got nil: trial91 #2).
    @Test(.timeLimit(.minutes(5))) func aLoadWhoseLeaseTheServerLostReturnsItsValue() async throws {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        let storage = try await sharedStore(server.configuration(namespace: "lost"))
        let gate = LoadGate()
        let caller = Task {
            try await storage.fetch(Product.self, id: "sku_lost", policy: LoadPolicy(loadTimeout: .seconds(600))) {
                id in
                await gate.pass()
                return Product(id: id, title: "loaded", category: "books", price: 1, rating: 1)
            }
        }
        try await gate.waitForLoad()
        try await offThePool { try server.flushAll() }
        gate.open()
        #expect(try await caller.value?.title == "loaded")
        // Not stored: its lease went with the server's data.
        #expect(try await storage.fetch(Product.self, id: "sku_lost") == nil)
    }

    /// A rerun the server refuses (an error reply: here a key of the namespace turned into another kind by hand) is
    /// no outage: waiting would not cure it, so the stream ends with the server's message, as before (review-92 F1:
    /// it was retried for the life of the stream, and the app never learnt why its result was frozen).
    @Test(.timeLimit(.minutes(5))) func aLiveQueryTheServerRefusesEndsWithItsMessage() async throws {
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        let clock = VirtualClock()
        let storage = try await sharedStore(server.configuration(namespace: "refused"), clock: clock)
        try await storage.save(StressRecord.make(id: "x", sequence: 1), expiration: .seconds(60))
        let results = Mutex(0)
        let ending = Mutex<String?>(nil)
        let watching = Task {
            do {
                for try await _ in storage.updates(of: StressRecord.self) { results.withLock { $0 += 1 } }
                ending.withLock { $0 = "finished" }
            } catch {
                ending.withLock { $0 = "\(error)" }
            }
        }
        defer { watching.cancel() }
        #expect(try await waitUntil { results.withLock { $0 } == 1 })
        // The expiry index every shared query sweeps first, made a string behind the library's back.
        try await offThePool {
            let endpoint = RESPEndpoint(
                host: "127.0.0.1", port: server.port, username: nil, password: nil, database: 0,
                connectTimeout: .seconds(30), readTimeout: .seconds(30))
            let session = try RESPSession(endpoint: endpoint, clock: SystemClock())
            defer { session.close() }
            _ = try session.roundTrip([.command("SET", "refused:e", "not a sorted set")])
        }
        clock.advance(by: .seconds(61))  // `x` expires: the query reruns, and its sweep meets the string.
        #expect(try await waitUntil { ending.withLock { $0 } != nil })
        #expect(ending.withLock { $0 }?.contains("WRONGTYPE") == true, "\(ending.withLock { $0 } ?? "")")
    }
}
