/// One open, prepared connection to a server (after `AUTH` and `SELECT`), used synchronously by one thread.
final class RESPSession {
    let endpoint: RESPEndpoint
    private let socket: RESPSocket
    private var parser = RESPParser()

    /// Connects, authenticates and selects the database, all within the endpoint's connect timeout.
    ///
    /// - Throws: `sharedTierUnavailable` saying which step failed: the TCP connection, `AUTH` (a wrong
    ///   password), or `SELECT` (a database out of range, or a password the server wants and did not get).
    init(endpoint: RESPEndpoint) throws(LocalStorageError) {
        self.endpoint = endpoint
        socket = try RESPSocket.connect(host: endpoint.host, port: endpoint.port, timeout: endpoint.connectTimeout)
        var commands: [[[UInt8]]] = []
        if let password = endpoint.password {
            var auth: [[UInt8]] = [Array("AUTH".utf8)]
            if let username = endpoint.username { auth.append(Array(username.utf8)) }
            auth.append(Array(password.utf8))
            commands.append(auth)
        }
        commands.append(.command("SELECT", String(endpoint.database)))
        let replies: [RESPValue]
        do {
            replies = try roundTrip(commands, timeout: endpoint.connectTimeout)
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

    /// Writes every command at once (a pipeline), then reads one reply per command, all within `timeout`.
    /// Error replies are returned as ``RESPValue/error(_:)``; only the connection's own failures throw.
    func roundTrip(_ commands: [[[UInt8]]], timeout: Duration? = nil) throws(LocalStorageError) -> [RESPValue] {
        let timeout = timeout ?? endpoint.readTimeout
        var out: [UInt8] = []
        for command in commands { RESPCommand.encode(command, into: &out) }
        try socket.write(out, timeout: timeout)
        let deadline = ContinuousClock.now + timeout
        var replies: [RESPValue] = []
        replies.reserveCapacity(commands.count)
        while replies.count < commands.count {
            if let reply = try nextBuffered() {
                replies.append(reply)
                continue
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero, try socket.read(into: &parser, milliseconds: left.pollMilliseconds) else {
                throw .sharedTierUnavailable("\(endpoint.label) did not reply within \(timeout)")
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
