import Foundation

/// Where a store's shared tier lives: a Redis or Valkey server that several instances of an app (processes,
/// hosts) share, with each instance's LMDB store as its near cache.
///
/// ```swift
/// var config = LocalStorageConfiguration()
/// config.sharedTier = SharedTierConfiguration(url: URL(string: "redis://127.0.0.1:6379/0")!, namespace: "shop")
/// let storage = try LocalStorage(configuration: config)
/// ```
/// The URL names the host, the port (6379 when absent), the database number (its path, `/0` when absent) and
/// optionally a password (`redis://:secret@host:6379/2`); ``password`` and ``database`` set them too and win
/// over the URL. The connection is plain TCP (no TLS). Instances on one server and namespace share every
/// record; two namespaces on one server never see each other's records.
public struct SharedTierConfiguration: Sendable, Hashable {
    /// The server, as `redis://[:password@]host[:port][/database]` (`valkey://` is accepted too).
    public var url: URL
    /// The prefix of every key this store writes, and of its change channel. Must not be empty.
    public var namespace: String
    /// The password sent with `AUTH` after connecting, or nil for none. Never logged and never part of an
    /// error message.
    public var password: String?
    /// The user name for `AUTH user password` (Redis 6 ACLs); nil for the default user.
    public var username: String?
    /// The database number selected after connecting (`SELECT`); nil takes the URL's path, else 0.
    public var database: Int?
    /// How long connecting (TCP, `AUTH`, `SELECT`) may take before the attempt fails.
    public var connectTimeout: Duration
    /// How long a reply may take before the command fails and the connection is dropped.
    public var readTimeout: Duration
    /// The first wait before another connection attempt after one failed; it doubles up to ``maxReconnectDelay``.
    public var reconnectDelay: Duration
    /// The longest wait between two connection attempts.
    public var maxReconnectDelay: Duration
    /// How many changes the server's change log keeps for instances that lost their connection to catch up
    /// from; an instance away for longer drops its local copies instead.
    public var changeLogRetention: Int
    /// How long a disconnected instance keeps serving its local records after it last heard from the server.
    ///
    /// Past that, reads throw ``LocalStorageError/sharedTierUnavailable(_:)`` until the instance has reconnected
    /// and caught up; a read that finds it so asks for a reconnection at once instead of waiting out the
    /// backoff. While connected, the instance checks the server every half of this time (a `PING` when nothing
    /// else arrived), so a server that stopped answering is noticed too. Default: 1 second.
    public var maxStaleness: Duration

    /// A shared tier on the server at `url`, under `namespace`.
    public init(
        url: URL, namespace: String, password: String? = nil, username: String? = nil,
        database: Int? = nil, connectTimeout: Duration = .seconds(2), readTimeout: Duration = .seconds(2),
        reconnectDelay: Duration = .milliseconds(50), maxReconnectDelay: Duration = .seconds(2),
        changeLogRetention: Int = 100_000, maxStaleness: Duration = .seconds(1)
    ) {
        self.url = url
        self.namespace = namespace
        self.password = password
        self.username = username
        self.database = database
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.reconnectDelay = reconnectDelay
        self.maxReconnectDelay = maxReconnectDelay
        self.changeLogRetention = changeLogRetention
        self.maxStaleness = maxStaleness
    }

    /// The URL with any password replaced by `***`, for logs and messages.
    public var redactedURL: String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(invalid URL)" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "(invalid URL)"
    }

    /// The endpoint the URL and the settings describe.
    ///
    /// - Throws: `sharedTierUnavailable` for a URL without a host, a scheme other than `redis`/`valkey`, a port
    ///   or database out of range, an empty namespace, a ``username`` without a password, a timeout, delay or
    ///   ``maxStaleness`` that is not positive (a zero delay would retry in a loop without pause), or a
    ///   ``changeLogRetention`` below 1.
    func endpoint() throws(LocalStorageError) -> RESPEndpoint {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw .sharedTierUnavailable("the shared tier URL \(redactedURL) does not parse")
        }
        let scheme = components.scheme?.lowercased() ?? ""
        guard ["redis", "valkey"].contains(scheme) else {
            let note = ["rediss", "valkeys"].contains(scheme) ? " (TLS is not supported)" : ""
            throw .sharedTierUnavailable(
                "the shared tier URL \(redactedURL) must start with redis:// or valkey://" + note)
        }
        guard let host = components.host, !host.isEmpty else {
            throw .sharedTierUnavailable("the shared tier URL \(redactedURL) names no host")
        }
        let port = components.port ?? 6379
        guard (1...65535).contains(port) else {
            throw .sharedTierUnavailable("the shared tier port \(port) is out of range")
        }
        var database = 0
        let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if !path.isEmpty {
            guard let number = Int(path) else {
                throw .sharedTierUnavailable("the shared tier URL's path \"/\(path)\" is not a database number")
            }
            database = number
        }
        if let explicit = self.database { database = explicit }
        guard database >= 0 else { throw .sharedTierUnavailable("the shared tier database \(database) is negative") }
        guard !namespace.isEmpty else { throw .sharedTierUnavailable("the shared tier namespace must not be empty") }
        // `URLComponents` gives the user and password percent-decoded already.
        let password = self.password ?? components.password
        let username = self.username ?? components.user.flatMap { $0.isEmpty ? nil : $0 }
        if username != nil && password == nil {
            throw .sharedTierUnavailable("the shared tier user name has no password (AUTH needs both)")
        }
        let durations = [
            ("connectTimeout", connectTimeout), ("readTimeout", readTimeout), ("reconnectDelay", reconnectDelay),
            ("maxReconnectDelay", maxReconnectDelay), ("maxStaleness", maxStaleness),
        ]
        if let (name, value) = durations.first(where: { $0.1 <= .zero }) {
            throw .sharedTierUnavailable("the shared tier's \(name) is \(value); it must be positive")
        }
        guard changeLogRetention >= 1 else {
            throw .sharedTierUnavailable(
                "the shared tier's changeLogRetention is \(changeLogRetention); it must keep at least 1 change")
        }
        return RESPEndpoint(
            host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port,
            username: username, password: password, database: database,
            connectTimeout: connectTimeout, readTimeout: readTimeout)
    }
}

/// Everything a connection needs to reach and prepare a server.
struct RESPEndpoint: Sendable, Hashable {
    let host: String
    let port: Int
    let username: String?
    let password: String?
    let database: Int
    let connectTimeout: Duration
    let readTimeout: Duration

    /// `host:port/database`, for messages (never the password); an IPv6 address in brackets, as a URL has it.
    var label: String { host.contains(":") ? "[\(host)]:\(port)/\(database)" : "\(host):\(port)/\(database)" }
}

extension Duration {
    /// Whole milliseconds, rounded up, at least 1 and at most `Int32.max` (for `poll(2)`).
    var pollMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        guard seconds < Int64(Int32.max) / 1000 else { return Int32.max }
        guard seconds >= 0 else { return 1 }
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(1, milliseconds))
    }
}
