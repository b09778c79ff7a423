/// Plain `GET`/`SET` round trips over the shared tier's own client, for the benchmark's floor: what one
/// command to the server costs, with nothing of LocalStorageKit's around it.
@_spi(Benchmarks)
public final class RawRedisClient: Sendable {
    private let connection: RESPConnection

    /// A client of the server at `127.0.0.1:port` (database 0, no password).
    public init(port: Int) {
        connection = RESPConnection(
            endpoint: RESPEndpoint(
                host: "127.0.0.1", port: port, username: nil, password: nil, database: 0,
                connectTimeout: .seconds(2), readTimeout: .seconds(5)),
            reconnectDelay: .milliseconds(50), maxReconnectDelay: .seconds(1), clock: SystemClock(),
            name: "LocalStorageKit.rawRedis")
    }

    deinit { connection.stop() }

    /// `SET key value`.
    public func set(_ key: String, _ value: [UInt8]) async throws {
        _ = try await connection.call([Array("SET".utf8), Array(key.utf8), value])
    }

    /// `GET key`: the value, or nil.
    public func get(_ key: String) async throws -> [UInt8]? {
        try await connection.call([Array("GET".utf8), Array(key.utf8)]).bytes
    }

    /// `PING`; whether the server answered.
    public func ping() async -> Bool {
        do {
            return try await connection.call([Array("PING".utf8)]) == .simple("PONG")
        } catch {
            return false
        }
    }
}
