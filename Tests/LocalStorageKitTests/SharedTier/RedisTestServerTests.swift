import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// The shared-tier tests' own servers: a test never runs against another test's server.
@Suite(
    .enabled(if: RedisTestServer.binary != nil, "redis-server is not installed (scripts/ensure-dependencies.sh redis)"))
struct RedisTestServerTests {
    /// A server started on a port another server holds exits; the one answering there is not taken for it (two
    /// tests given the same free port shared one server, and one's long script made the other's calls fail BUSY).
    @Test func aServerOnATakenPortIsNotTakenForTheOneThere() async throws {
        let first = try await RedisTestServer.started()
        defer { first.stop() }
        await #expect(throws: SharedTestError.self) {
            try await offThePool { _ = try RedisTestServer(port: first.port) }
        }
    }
}
