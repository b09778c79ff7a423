import Foundation

/// What the subscriber connection reports, in order, on its own thread.
enum SubscriberEvent: Sendable {
    /// The subscription is live: every message published from now on arrives.
    case subscribed
    /// A message on the channel.
    case message([UInt8])
    /// The server answered a heartbeat `PING` sent at `sentAt` (the clock's uptime): the subscription is live,
    /// and every message the server published before it answered has arrived (it comes ahead of the reply).
    case heard(sentAt: Duration)
    /// The connection was lost (or could not be opened); messages published meanwhile are missed.
    case disconnected(LocalStorageError)
    /// Not from the subscriber: the shared tier asks the loop that follows it to catch up from the server's
    /// change log (a change it was sent could not be applied to the local store).
    case catchUp
}

/// The subscriber connection: `SUBSCRIBE`s to one channel and reports its messages, reconnecting by itself
/// with backoff (doubling from the first delay up to the maximum, on `clock`) whenever the connection fails.
///
/// While subscribed it sends a `PING` every `heartbeat` (whatever the messages in between: a reply vouches for the
/// server's state when the `PING` went out, a message for nothing past itself) and drops a connection whose `PING` got no
/// answer within the read timeout, so a server that stopped answering (stopped, or cut off) is noticed even
/// when its socket stays open. ``kick()`` asks for news at once: the next attempt starts now (a pause ends),
/// or, while subscribed, a `PING` goes out now.
final class RESPSubscriber: @unchecked Sendable {
    // @unchecked: `isKicked`, `pauseToken` and `endedPause` are only touched under the worker's lock; everything
    // else is immutable or owned by the worker's thread.
    let endpoint: RESPEndpoint
    private let channel: [UInt8]
    private let firstDelay: Duration
    private let maxDelay: Duration
    private let heartbeat: Duration?
    private let clock: any StorageClock
    private let report: @Sendable (SubscriberEvent) -> Void
    /// The subscriber's thread (it takes no jobs: it loops until stopped).
    private let worker: SerialWorker<Never>
    private var isKicked = false
    private var pauseToken = 0
    private var endedPause = 0

    init(
        endpoint: RESPEndpoint, channel: [UInt8], reconnectDelay: Duration, maxReconnectDelay: Duration,
        heartbeat: Duration? = nil, clock: any StorageClock, name: String,
        report: @escaping @Sendable (SubscriberEvent) -> Void
    ) {
        self.endpoint = endpoint
        self.channel = channel
        firstDelay = reconnectDelay
        maxDelay = max(reconnectDelay, maxReconnectDelay)
        self.heartbeat = heartbeat
        self.clock = clock
        self.report = report
        worker = SerialWorker(name: name)
        worker.start { [self] in run() }
    }

    /// Ends the subscription and its thread (within about 100 ms; called from its own thread, it does not
    /// wait for it).
    func stop() {
        worker.stop()
    }

    /// Asks for news from the server now: ends a backoff pause at once, or sends a `PING` while subscribed.
    func kick() {
        worker.locked { isKicked = true }
        worker.signal()
    }

    private var stopping: Bool { worker.isStopping }

    /// Whether a kick came since the last look (and forgets it).
    private func takeKick() -> Bool {
        worker.locked {
            defer { isKicked = false }
            return isKicked
        }
    }

    /// Waits `duration` of the clock unless the subscriber stops or is kicked first; false when it stops.
    private func pause(_ duration: Duration) -> Bool {
        let token = worker.locked {
            pauseToken += 1
            return pauseToken
        }
        let clock = self.clock
        let timer = Task { [self] in
            do {
                try await clock.sleep(for: duration)
            } catch {
                return  // Cancelled: the pause ended otherwise.
            }
            endPause(token)
        }
        let goOn = worker.wait {
            guard isKicked || endedPause >= token else { return false }
            isKicked = false
            return true
        }
        timer.cancel()
        return goOn
    }

    /// Ends the pause `token` names (its time has come).
    private func endPause(_ token: Int) {
        worker.locked { endedPause = max(endedPause, token) }
        worker.signal()
    }

    private func run() {
        var delay = firstDelay
        while !stopping {
            do {
                try follow { delay = firstDelay }
                return
            } catch let error as LocalStorageError {
                report(.disconnected(error))
            } catch {
                report(.disconnected(.sharedTierUnavailable("the subscriber connection failed: \(error)")))
            }
            guard pause(delay) else { return }
            delay = min(delay * 2, maxDelay)
        }
    }

    /// One connection: subscribes and reports until it fails (throws) or the subscriber stops (returns).
    private func follow(subscribed: () -> Void) throws {
        let session = try RESPSession(endpoint: endpoint, clock: clock)
        defer { session.close() }
        try session.write([[Array("SUBSCRIBE".utf8), channel]])
        var confirmed = false
        let subscribeDeadline = clock.uptime() + endpoint.readTimeout
        /// When the last `PING` was answered (or the subscription began).
        var lastAnswered = clock.uptime()
        var pingSent: Duration?
        while !stopping {
            let now = clock.uptime()
            // A deadline passed: the reply may have come while this thread was not running (a loaded machine),
            // so what the socket holds is read before the server is called silent.
            var arrived: RESPValue?
            if !confirmed, now >= subscribeDeadline {
                arrived = try session.nextReply(milliseconds: 0)
                guard arrived != nil else {
                    throw LocalStorageError.sharedTierUnavailable("SUBSCRIBE at \(endpoint.label) got no reply")
                }
            }
            if arrived == nil, let sent = pingSent, now - sent >= endpoint.readTimeout {
                arrived = try session.nextReply(milliseconds: 0)
                guard arrived != nil else {
                    throw LocalStorageError.sharedTierUnavailable(
                        "\(endpoint.label) did not answer PING within \(endpoint.readTimeout)")
                }
            }
            if arrived == nil, confirmed, pingSent == nil,
                takeKick() || heartbeat.map({ now - lastAnswered >= $0 }) == true
            {
                try session.write([[Array("PING".utf8)]])
                pingSent = now
            }
            guard let reply = try arrived ?? session.nextReply(milliseconds: 50) else { continue }
            guard let parts = reply.elements, parts.count >= 2, let kind = parts[0].text else {
                if case .error(let message) = reply {
                    throw LocalStorageError.sharedTierUnavailable("SUBSCRIBE at \(endpoint.label) failed: \(message)")
                }
                continue
            }
            switch kind.lowercased() {
            case "subscribe" where parts.count >= 3:
                confirmed = true
                lastAnswered = clock.uptime()
                subscribed()
                report(.subscribed)
            case "message" where parts.count >= 3:
                if let payload = parts[2].bytes { report(.message(payload)) }
            case "pong":
                lastAnswered = clock.uptime()
                if let sent = pingSent { report(.heard(sentAt: sent)) }
                pingSent = nil
            default:
                continue
            }
        }
    }
}
