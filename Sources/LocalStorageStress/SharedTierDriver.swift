import Foundation
import LocalStorageKit
import LocalStorageTestSupport
import Synchronization

/// The `shared` mode of the helper: one instance of a store whose shared tier is the Redis server on a
/// loopback port, driven by commands on standard input, one reply line each.
///
/// ```
/// save ID GROUP SEQUENCE TTL_MS   → ok | error: …      (GROUP "-" for none, TTL_MS 0 for never)
/// delete ID                      → ok | error: …
/// get ID                         → sequence N | nil | error: …
/// watch GROUP                    → ok      (starts a live query: group == GROUP, by sequence)
/// live                           → live ID,ID,…  (its latest result) | live ?  (none yet)
/// count GROUP                    → count N (on the shared tier) | error: …
/// ```
enum SharedTierDriver {
    static func run(directory: String, port: Int, namespace: String) async throws {
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = URL(fileURLWithPath: directory, isDirectory: true)
        configuration.durability = .none
        configuration.expirySweepInterval = nil
        configuration.liveQueryCoalescing = .milliseconds(5)
        guard let url = URL(string: "redis://127.0.0.1:\(port)/0") else { throw DriverError("bad port \(port)") }
        var tier = SharedTierConfiguration(url: url, namespace: namespace)
        tier.reconnectDelay = .milliseconds(20)
        tier.maxReconnectDelay = .milliseconds(200)
        // Far longer than a loaded test machine's stalls: the default 1 s `maxStaleness` refused local reads when
        // three helpers and the test's own work delayed heartbeats (none of its tests is about staleness).
        tier.readTimeout = .seconds(30)
        tier.connectTimeout = .seconds(30)
        tier.maxStaleness = .seconds(30)
        configuration.sharedTier = tier
        let storage = try LocalStorage(configuration: configuration)
        let latest = LatestResult()
        var watcher: Task<Void, Never>?
        defer { watcher?.cancel() }
        // The first read waits until the instance is in sync with the shared tier (it follows changes from then on).
        _ = try await storage.fetch(StressRecord.self, id: "warm-up")
        LocalStorageStress.say("ready")
        while let line = readLine() {
            let words = line.split(separator: " ").map(String.init)
            do {
                switch words.first {
                case "save" where words.count == 5:
                    let record = StressRecord(
                        id: words[1], group: words[2] == "-" ? nil : words[2],
                        sequence: Int(words[3]) ?? 0, blob: "b")
                    let ttl = Int(words[4]) ?? 0
                    try await storage.save(record, expiration: ttl == 0 ? .never : .seconds(Double(ttl) / 1000))
                    LocalStorageStress.say("ok")
                case "delete" where words.count == 2:
                    try await storage.delete(StressRecord.self, id: words[1])
                    LocalStorageStress.say("ok")
                case "get" where words.count == 2:
                    let record = try await storage.fetch(StressRecord.self, id: words[1])
                    LocalStorageStress.say(record.map { "sequence \($0.sequence)" } ?? "nil")
                case "watch" where words.count == 2:
                    let updates = storage.updates(
                        of: StressRecord.self, matching: [.equals("group", words[1])],
                        orderedBy: .ascending("sequence"))
                    watcher = Task {
                        do {
                            for try await result in updates { latest.value.withLock { $0 = result.map(\.id) } }
                        } catch {
                            latest.value.withLock { $0 = ["error: \(error)"] }
                        }
                    }
                    LocalStorageStress.say("ok")
                case "live":
                    LocalStorageStress.say(
                        "live " + (latest.value.withLock { $0 }.map { $0.joined(separator: ",") } ?? "?"))
                case "count" where words.count == 2:
                    let count = try await storage.count(
                        StressRecord.self, matching: [.equals("group", words[1])],
                        options: FetchOptions(scope: .shared))
                    LocalStorageStress.say("count \(count)")
                default:
                    LocalStorageStress.say("error: unknown command \(line)")
                }
            } catch {
                LocalStorageStress.say("error: \(error)")
            }
        }
    }

    /// The latest result of the live query, shared with the task that follows it.
    final class LatestResult: Sendable {
        let value = Mutex<[String]?>(nil)
    }

    struct DriverError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
