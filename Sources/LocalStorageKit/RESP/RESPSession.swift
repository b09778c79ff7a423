/// One open, prepared connection to a server (after `AUTH` and `SELECT`), used synchronously by one thread.
///
/// Reply deadlines are read on the store's clock (a ``VirtualClock`` in tests decides when a reply is late);
/// the socket itself waits in short slices of real time between looks at that clock.
final class RESPSession {
    let endpoint: RESPEndpoint
    let clock: any StorageClock
    private let socket: RESPSocket
    private var parser = RESPParser()
    /// The longest real-time wait on the socket before the deadline is looked at again.
    private static let slice = Duration.milliseconds(50)
    /// What a failure after the request went out adds to its reason: the server may have applied it.
    static let unknownOutcome = "; the request was sent, so its outcome is unknown (it may have been applied)"
    /// What the reason of a reply that did not come in time says after the timeout.
    private static let nothingCame = "(nothing came for that long)"

    /// Whether `error` is a round trip's failure because the server sent nothing for its whole timeout (a stall),
    /// not a closed or refused connection.
    static func isSilence(_ error: LocalStorageError) -> Bool {
        guard case .sharedTierUnavailable(let reason) = error else { return false }
        return reason.hasSuffix(nothingCame + unknownOutcome)
    }

    /// Connects, authenticates and selects the database, all within the endpoint's connect timeout.
    ///
    /// - Throws: `sharedTierUnavailable` saying which step failed: the TCP connection, `AUTH` (a wrong
    ///   password), or `SELECT` (a database out of range, or a password the server wants and did not get).
    init(endpoint: RESPEndpoint, clock: any StorageClock) throws(LocalStorageError) {
        self.endpoint = endpoint
        self.clock = clock
        let started = ContinuousClock.now
        socket = try RESPSocket.connect(host: endpoint.host, port: endpoint.port, timeout: endpoint.connectTimeout)
        var commands: [[[UInt8]]] = []
        if let password = endpoint.password {
            var auth: [[UInt8]] = [Array("AUTH".utf8)]
            if let username = endpoint.username { auth.append(Array(username.utf8)) }
            auth.append(Array(password.utf8))
            commands.append(auth)
        }
        commands.append(.command("SELECT", String(endpoint.database)))
        var prepare: [UInt8] = []
        for command in commands { RESPCommand.encode(command, into: &prepare) }
        let replies: [RESPValue]
        do {
            // What the steps before left of the timeout (at least a moment: the server may answer at once).
            func left() -> Duration { max(.milliseconds(1), endpoint.connectTimeout - (ContinuousClock.now - started)) }
            try socket.write(prepare, timeout: left())
            replies = try self.replies(count: commands.count, timeout: left())
        } catch {
            socket.close()
            throw error
        }
        for (position, reply) in replies.enumerated() {
            guard case .error(let message) = reply else { continue }
            socket.close()
            let isAuth = endpoint.password != nil && position == 0
            if isAuth {
                throw .sharedTierUnavailable("AUTH at \(endpoint.label) was refused: \(message)")
            }
            let hint =
                message.hasPrefix("NOAUTH")
                ? " (the server wants a password: set SharedTierConfiguration.password)"
                : ""
            throw .sharedTierUnavailable(
                "SELECT \(endpoint.database) at \(endpoint.label) was refused: \(message)\(hint)")
        }
    }

    deinit { socket.close() }

    func close() { socket.close() }

    /// Whether the connection can no longer carry a request (see ``RESPSocket/isStale``), or holds bytes of a
    /// reply nobody waits for.
    var isStale: Bool { parser.hasBufferedBytes || socket.isStale }

    /// Writes every command at once (a pipeline), then reads one reply per command, all within `timeout` of
    /// the clock. Error replies are returned as ``RESPValue/error(_:)``; only the connection's own failures
    /// throw. `sent` runs once every byte is written; a failure after that says the outcome is unknown.
    func roundTrip(
        _ commands: [[[UInt8]]], timeout: Duration? = nil, sent: () -> Void = {}
    ) throws(LocalStorageError) -> [RESPValue] {
        let timeout = timeout ?? endpoint.readTimeout
        var out: [UInt8] = []
        for command in commands { RESPCommand.encode(command, into: &out) }
        try socket.write(out, timeout: timeout)
        // The wait counts from the moment the request went out, which is what `sent` tells (a test advancing a
        // virtual clock once it sees the request out must find the deadline already set).
        let deadline = clock.uptime() + timeout
        sent()
        do {
            return try replies(count: commands.count, timeout: timeout, deadline: deadline)
        } catch {
            throw .sharedTierUnavailable(RESPConnection.reason(of: error) + Self.unknownOutcome)
        }
    }

    /// Reads `count` replies, waiting at most `timeout` of the clock for each part of them: a large reply (a
    /// catch-up's records) may take longer than `timeout` as long as its bytes keep coming; a server that
    /// sends nothing for that long has not replied.
    func replies(
        count: Int, timeout: Duration, deadline: Duration? = nil
    ) throws(LocalStorageError) -> [RESPValue] {
        var deadline = deadline ?? clock.uptime() + timeout
        var replies: [RESPValue] = []
        replies.reserveCapacity(count)
        while replies.count < count {
            if let reply = try nextBuffered() {
                replies.append(reply)
                continue
            }
            let left = deadline - clock.uptime()
            guard left > .zero else {
                // The reply may have come while this thread was not running (a loaded machine): what the socket
                // holds is read before the server is called silent.
                if try socket.read(into: &parser, milliseconds: 0) {
                    deadline = clock.uptime() + timeout
                    continue
                }
                throw .sharedTierUnavailable(
                    "\(endpoint.label) did not reply within \(timeout) \(Self.nothingCame)")
            }
            if try socket.read(into: &parser, milliseconds: min(left, Self.slice).pollMilliseconds) {
                deadline = clock.uptime() + timeout
            }
        }
        return replies
    }

    /// Writes commands without waiting for replies (the subscriber's `SUBSCRIBE`).
    func write(_ commands: [[[UInt8]]]) throws(LocalStorageError) {
        var out: [UInt8] = []
        for command in commands { RESPCommand.encode(command, into: &out) }
        try socket.write(out, timeout: endpoint.readTimeout)
    }

    /// The next reply: buffered, or read within `milliseconds`; nil when none came in time.
    func nextReply(milliseconds: Int32) throws(LocalStorageError) -> RESPValue? {
        if let reply = try nextBuffered() { return reply }
        guard try socket.read(into: &parser, milliseconds: milliseconds) else { return nil }
        return try nextBuffered()
    }

    private func nextBuffered() throws(LocalStorageError) -> RESPValue? {
        do {
            return try parser.next()
        } catch {
            throw .sharedTierUnavailable("the reply from \(endpoint.label) is malformed: \(error)")
        }
    }
}
