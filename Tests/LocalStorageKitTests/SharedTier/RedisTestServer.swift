import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `redis-server` the shared-tier tests start on a free loopback port, in a temporary directory of its
/// own, with `appendonly yes` and `appendfsync always` (a write that returned survives a SIGKILL).
final class RedisTestServer: Sendable {
    let port: Int
    let directory: URL
    let password: String?
    private let process = Mutex<ChildProcess?>(nil)

    /// `redis-server` on the `PATH` (or in the usual places), or nil.
    static let binary: String? = {
        var candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        candidates += ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/opt/homebrew/bin"]
        for directory in candidates {
            let path = directory + "/redis-server"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()

    /// Starts a server on a free loopback port (or `port`) in a fresh directory (or `directory`).
    ///
    /// A port that was free when asked for can be taken by another test's server before this one binds it: this
    /// server then exits, and the other one answers on the port. So a server counts as started only when the
    /// process answering is its own (Redis's `process_id`), and a port found taken is given up for another.
    init(password: String? = nil, port: Int? = nil, directory: URL? = nil) throws {
        guard RedisTestServer.binary != nil else { throw SharedTestError.noServer }
        self.directory = directory ?? temporaryDirectory()
        self.password = password
        var attempts = 0
        while true {
            let chosen = try port ?? RedisTestServer.freePort()
            attempts += 1
            do {
                let server = try RedisTestServer.launch(port: chosen, directory: self.directory, password: password)
                self.port = chosen
                process.withLock { $0 = server }
                return
            } catch SharedTestError.portTaken(let taken) where port == nil && attempts < 5 {
                _ = taken  // Another test's server took it first: try another.
            }
        }
    }

    deinit {
        process.withLock { process in _ = process?.kill() }
    }

    /// Restarts the server process (on its port, in its directory) and waits until it answers.
    func start() throws {
        let server = try RedisTestServer.launch(port: port, directory: directory, password: password)
        process.withLock { $0 = server }
    }

    /// Starts a server process and waits until it answers on `port`: its own answer, not another test's server's.
    private static func launch(port: Int, directory: URL, password: String?) throws -> ChildProcess {
        guard let binary = RedisTestServer.binary else { throw SharedTestError.noServer }
        var arguments = [
            "--port", "\(port)", "--bind", "127.0.0.1", "--dir", directory.path,
            "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
            "--logfile", directory.appendingPathComponent("redis.log").path,
        ]
        if let password { arguments += ["--requirepass", password] }
        let server = try ChildProcess(
            executable: binary, arguments: arguments, standardOutput: .nullDevice, standardError: .nullDevice)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let answering = try? processAnswering(port: port, password: password)
            if answering == server.processIdentifier { return server }
            guard server.isRunning else {
                // Another server answers there, or (under a password, or too slow to answer) its log says so.
                let logFile = directory.appendingPathComponent("redis.log")
                let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
                if answering != nil || log.contains("Address already in use") { throw SharedTestError.portTaken(port) }
                break
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        _ = server.kill()
        throw SharedTestError.serverDidNotStart(port: port, log: directory.appendingPathComponent("redis.log").path)
    }

    /// The process id of the server answering on `port` (`INFO server`'s `process_id`).
    private static func processAnswering(port: Int, password: String?) throws -> Int32? {
        let endpoint = RESPEndpoint(
            host: "127.0.0.1", port: port, username: nil, password: password, database: 0,
            connectTimeout: .milliseconds(200), readTimeout: .milliseconds(500))
        let session = try RESPSession(endpoint: endpoint, clock: SystemClock())
        defer { session.close() }
        let info = try session.roundTrip([.command("INFO", "server")]).first?.text ?? ""
        guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("process_id:") }) else {
            return nil
        }
        return Int32(line.dropFirst("process_id:".count))
    }

    /// Starts a server like ``init(password:port:directory:)``, on a thread of its own: starting waits for
    /// the server to answer, which must not hold one of the few threads every async test shares.
    static func started(password: String? = nil) async throws -> RedisTestServer {
        try await offThePool { try RedisTestServer(password: password) }
    }

    /// ``start()`` on a thread of its own.
    func restart() async throws {
        try await offThePool { try self.start() }
    }

    /// ``killHard()`` on a thread of its own.
    func killOffThePool() async {
        _ = try? await offThePool { self.killHard() }
    }

    /// Empties the server (`FLUSHALL`) while clients stay connected.
    func flushAll() throws {
        let endpoint = RESPEndpoint(
            host: "127.0.0.1", port: port, username: nil, password: password, database: 0,
            connectTimeout: .seconds(30), readTimeout: .seconds(30))
        let session = try RESPSession(endpoint: endpoint, clock: SystemClock())
        defer { session.close() }
        let reply = try session.roundTrip([.command("FLUSHALL")]).first
        guard reply == .simple("OK") else {
            throw LocalStorageError.sharedTierUnavailable("FLUSHALL replied \(String(describing: reply))")
        }
    }

    /// Kills the server with SIGKILL and waits until it is gone.
    func killHard() {
        let server = process.withLock { process -> ChildProcess? in
            defer { process = nil }
            return process
        }
        guard let server else { return }
        server.kill()
        do {
            try server.waitUntilExit()
        } catch {
            Issue.record("redis-server on port \(port): \(error)")
        }
    }

    /// Stops the server process with SIGSTOP: its sockets stay open, nothing is answered.
    func pause() { signal(SIGSTOP) }

    /// Lets a paused server go on (SIGCONT): it answers what it was sent meanwhile.
    func resume() { signal(SIGCONT) }

    private func signal(_ number: Int32) {
        process.withLock { process in _ = process?.kill(number) }
    }

    /// Stops the server (SIGKILL: the tests need nothing it has not already fsynced).
    func stop() { killHard() }

    /// A shared tier on this server under `namespace`.
    func configuration(namespace: String, password: String? = nil) -> SharedTierConfiguration {
        var tier = SharedTierConfiguration(
            url: URL(string: "redis://127.0.0.1:\(port)/0") ?? URL(fileURLWithPath: "/"),
            namespace: namespace, password: password ?? self.password)
        tier.connectTimeout = .seconds(30)
        // Generous: a loaded machine (two suites on 2 cores, the server syncing every write) can take seconds
        // to answer; a test about timeouts sets its own, on a virtual clock.
        tier.readTimeout = .seconds(30)
        tier.reconnectDelay = .milliseconds(20)
        tier.maxReconnectDelay = .milliseconds(200)
        return tier
    }

    /// A free TCP port on the loopback interface (bound, read back, released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SharedTestError.noPort }
        defer { close(fd) }
        return try boundPort(fd)
    }

    /// Binds `fd` to a free loopback port the kernel picks; returns the port.
    fileprivate static func boundPort(_ fd: Int32) throws -> Int {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw SharedTestError.noPort }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw SharedTestError.noPort }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A loopback port that refuses connections for as long as this object lives: bound, never listening, so that no
/// server another test starts meanwhile can take it (a port that was merely free when asked for can be).
final class RefusingPort {
    let port: Int
    private let fd: Int32

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SharedTestError.noPort }
        do {
            port = try RedisTestServer.boundPort(fd)
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }
}

enum SharedTestError: Error, CustomStringConvertible {
    case noServer
    case noPort
    case serverDidNotStart(port: Int, log: String)
    case portTaken(Int)
    case timedOut(String)

    var description: String {
        switch self {
        case .noServer: "redis-server is not installed (scripts/ensure-dependencies.sh redis)"
        case .noPort: "no free loopback port"
        case .serverDidNotStart(let port, let log): "redis-server did not start on port \(port); see \(log)"
        case .portTaken(let port): "another server took port \(port) first"
        case .timedOut(let what): "timed out waiting for \(what)"
        }
    }
}

/// The server the shared-tier suites share: the one `LOCALSTORAGE_REDIS_PORT` names (`.ci/run` starts it), else
/// one started for this test process, else none (the suites are skipped, saying why).
enum SharedTestServer {
    static let port: Int? = {
        if let text = ProcessInfo.processInfo.environment["LOCALSTORAGE_REDIS_PORT"], let port = Int(text) {
            return port
        }
        do {
            let server = try RedisTestServer()
            keep.withLock { $0 = server }
            return server.port
        } catch {
            return nil
        }
    }()

    /// The server started here, kept for the life of the test process (killed at exit by `atexit`).
    private static let keep = Mutex<RedisTestServer?>(nil)

    static var isAvailable: Bool {
        if port != nil { registerCleanup() }
        return port != nil
    }

    static let skipReason: Comment =
        "no Redis server: set LOCALSTORAGE_REDIS_PORT, or install redis-server (scripts/ensure-dependencies.sh redis)"

    private static let cleanup: Void = {
        atexit { SharedTestServer.keep.withLock { $0?.stop() } }
    }()

    private static func registerCleanup() { _ = cleanup }

    /// A shared tier on the suite's server under a fresh namespace (tests never see each other's records).
    static func configuration(namespace: String = "t-\(UUID().uuidString)") -> SharedTierConfiguration {
        var tier = SharedTierConfiguration(
            url: URL(string: "redis://127.0.0.1:\(port ?? 1)/0") ?? URL(fileURLWithPath: "/"),
            namespace: namespace)
        // Generous: a loaded machine (two suites on 2 cores, the server syncing every write) can take seconds
        // to answer; a test about timeouts sets its own, on a virtual clock.
        tier.connectTimeout = .seconds(30)
        tier.readTimeout = .seconds(30)
        tier.reconnectDelay = .milliseconds(20)
        tier.maxReconnectDelay = .milliseconds(200)
        return tier
    }
}

/// An in-memory store whose shared tier is `tier`, once it has made its first connection (an instance
/// follows the shared tier's changes from its first subscription on) or failed to.
func sharedStore(
    _ tier: SharedTierConfiguration, logger: (any StorageLogger)? = nil, clock: (any StorageClock)? = nil
) async throws -> LocalStorage {
    var configuration = LocalStorageConfiguration.inMemory
    var tier = tier
    if clock == nil, tier.maxStaleness == .seconds(1) {
        // On the real clock, a loaded test machine can delay a heartbeat past the 1 s default: tests that are
        // not about staleness must not depend on it (SharedTierStalenessTests drive it on a VirtualClock).
        tier.maxStaleness = .seconds(30)
    }
    configuration.sharedTier = tier
    if let clock {
        configuration.clock = clock
        configuration.expirySweepInterval = nil
    }
    configuration.liveQueryCoalescing = .milliseconds(5)
    let storage = try LocalStorage(configuration: configuration, logger: logger)
    _ = try await waitUntil { storage.sharedTier.map { $0.phase != .connecting && $0.phase != .syncing } ?? true }
    return storage
}

/// Waits (polling, up to `timeout`) until `condition` holds; returns whether it did. Tests assert on the
/// outcome, never on how long it took.
func waitUntil(timeout: Duration = .seconds(300), _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// A logger that keeps every line, to check what was logged.
final class CapturingLogger: StorageLogger, Sendable {
    private let lines = Mutex<[String]>([])

    func log(level: StorageLogLevel, message: String, metadata: [String: String]?) {
        let text =
            "\(level) \(message) "
            + (metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: " ")
        lines.withLock { $0.append(text) }
    }

    func record(duration: TimeInterval, operation: String) {}

    var all: [String] { lines.withLock { $0 } }
}

/// The first `count` elements of `stream`, mapped; fails after `timeout` instead of waiting for ever.
func first<S: AsyncSequence & Sendable, R: Sendable>(
    _ count: Int, of stream: S, timeout: Duration = .seconds(60),
    _ transform: @escaping @Sendable (S.Element) -> R
) async throws -> [R] {
    try await withThrowingTaskGroup(of: [R]?.self) { group in
        group.addTask {
            var out: [R] = []
            for try await element in stream {
                out.append(transform(element))
                if out.count == count { break }
            }
            return out
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let result = try await group.next() ?? nil
        group.cancelAll()
        guard let result else { throw SharedTestError.timedOut("\(count) elements of a stream") }
        return result
    }
}

/// `body`'s result, or a failure after `timeout` instead of waiting for ever.
func withTimeout<R: Sendable>(
    _ timeout: Duration = .seconds(300),
    _ body: @escaping @Sendable () async throws -> R
) async throws -> R {
    try await withThrowingTaskGroup(of: R?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let result = try await group.next() ?? nil
        group.cancelAll()
        guard let result else { throw SharedTestError.timedOut("a test step") }
        return result
    }
}

extension FetchOptions {
    /// A count of this instance's near cache alone (what `count(_:)` counted before it counted the shared tier).
    static let nearCache = FetchOptions(scope: .local)
}
