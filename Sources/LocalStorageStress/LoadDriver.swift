import Foundation
@_spi(Benchmarks) import LocalStorageKit
import LocalStorageTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `LocalStorageStress load DIR ID CALLERS LOADFILE MILLIS|hang|nil-on-input`: starts CALLERS tasks that all fetch
/// StressRecord ID through the cache at once. The loader appends one line to LOADFILE (so a test can count
/// the loads of every process), prints `loading`, then returns a record after MILLIS milliseconds, or never
/// (`hang`, for a test that kills it mid-load), or nil once a line comes on standard input (`nil-on-input`).
/// Prints `done N` with the number of callers that got a record, or `error: …`.
///
/// With `PORT NAMESPACE TIMEOUT_MS` after those, the store has a shared tier on the Redis server at that
/// loopback port and namespace, and the callers' `loadTimeout` is TIMEOUT_MS (the lease's time on the server);
/// the loader prints `loading without a lease` instead when the server holds no lease for the id.
enum LoadDriver {
    /// The optional shared tier of the `load` mode.
    struct Shared {
        let port: Int
        let namespace: String
        let timeout: Duration
    }

    static func run(
        directory: String, id: String, callers: Int, loadFile: String, delay: String, shared: Shared? = nil
    ) async throws {
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = URL(fileURLWithPath: directory, isDirectory: true)
        configuration.durability = .none
        configuration.expirySweepInterval = nil
        configuration.externalChangePollInterval = .milliseconds(20)
        if let shared {
            guard let url = URL(string: "redis://127.0.0.1:\(shared.port)/0") else {
                throw StressError(description: "bad port \(shared.port)")
            }
            var tier = SharedTierConfiguration(url: url, namespace: shared.namespace)
            tier.reconnectDelay = .milliseconds(20)
            tier.readTimeout = .seconds(5)
            tier.maxStaleness = .seconds(30)
            configuration.sharedTier = tier
        }
        let policy = LoadPolicy(loadTimeout: shared?.timeout ?? .seconds(120))
        let storage = try LocalStorage(configuration: configuration)
        let hang = delay == "hang"
        let findsNothing = delay == "nil-on-input"
        let millis = Int(delay) ?? 0
        let raw = shared.map { RawRedisClient(port: $0.port) }
        let loader: @Sendable (String) async throws -> StressRecord? = { id in
            try append(line: "\(getpid()) \(id)", to: loadFile)
            if let raw, let shared {
                // Whether this load runs under a lease on the server (`{ns}:lease:{type}:{id}`), seen at once.
                let key = "\(shared.namespace):lease:\(StressRecord.storageName):\(id)"
                LocalStorageStress.say(try await raw.get(key) == nil ? "loading without a lease" : "loading")
            } else {
                LocalStorageStress.say("loading")
            }
            if hang {
                while true { try await Task.sleep(for: .seconds(3600)) }
            }
            if findsNothing {
                await nextInputLine()
                return nil
            }
            try await Task.sleep(for: .milliseconds(millis))
            return StressRecord.make(id: id, sequence: Int(getpid()))
        }
        LocalStorageStress.say("ready")
        let found = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<max(0, callers) {
                group.addTask {
                    try await storage.fetch(
                        StressRecord.self, id: id, policy: policy, load: loader) != nil
                }
            }
            var found = 0
            for try await got in group where got { found += 1 }
            return found
        }
        LocalStorageStress.say("done \(found)")
    }

    /// Waits on a thread of its own (not one of the pool's) until a line, or the end, comes on standard input.
    private static func nextInputLine() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                _ = readLine()
                continuation.resume()
            }
        }
    }

    /// Appends `line` to `path` in one `write(2)` on a file opened with `O_APPEND`, so that lines of
    /// several processes never interleave.
    static func append(line: String, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard descriptor >= 0 else { throw StressError(description: "cannot open \(path): errno \(errno)") }
        defer { close(descriptor) }
        let bytes = Array((line + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw StressError(description: "cannot append to \(path)") }
    }
}
