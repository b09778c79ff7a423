import Dispatch
import Foundation

/// What the subscriber connection reports, in order, on its own thread.
enum SubscriberEvent: Sendable {
    /// The subscription is live: every message published from now on arrives.
    case subscribed
    /// A message on the channel.
    case message([UInt8])
    /// The connection was lost (or could not be opened); messages published meanwhile are missed.
    case disconnected(LocalStorageError)
}

/// The subscriber connection: `SUBSCRIBE`s to one channel and reports its messages, reconnecting by itself
/// with backoff (doubling from the first delay up to the maximum) whenever the connection fails.
final class RESPSubscriber: @unchecked Sendable {
    // @unchecked: `isStopping` and `thread` are only touched under `condition`; everything else is immutable
    // or owned by the subscriber's thread.
    let endpoint: RESPEndpoint
    private let channel: [UInt8]
    private let firstDelay: Duration
    private let maxDelay: Duration
    private let report: @Sendable (SubscriberEvent) -> Void
    private let condition = NSCondition()
    private var isStopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    init(
        endpoint: RESPEndpoint, channel: [UInt8], reconnectDelay: Duration, maxReconnectDelay: Duration,
        name: String, report: @escaping @Sendable (SubscriberEvent) -> Void
    ) {
        self.endpoint = endpoint
        self.channel = channel
        firstDelay = reconnectDelay
        maxDelay = max(reconnectDelay, maxReconnectDelay)
        self.report = report
        let thread = Thread { [self] in run() }
        thread.name = name
        self.thread = thread
        thread.start()
    }

    /// Ends the subscription and its thread (within about 100 ms).
    func stop() {
        condition.lock()
        isStopping = true
        // Called from its own thread (cannot happen today, but must not deadlock): just let the loop end.
        let started = thread.map { $0 != Thread.current } ?? false
        thread = nil
        condition.broadcast()
        condition.unlock()
        if started { finished.wait() }
    }

    private var stopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return isStopping
    }

    /// Sleeps for `duration` unless the subscriber stops first; false when it stops.
    private func pause(_ duration: Duration) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
        let until = Date(timeIntervalSinceNow: seconds)
        while !isStopping {
            if !condition.wait(until: until) { break }
        }
        return !isStopping
    }

    private func run() {
        var delay = firstDelay
        defer { finished.signal() }
        while !stopping {
            do {
                let session = try RESPSession(endpoint: endpoint)
                defer { session.close() }
                try session.write([[Array("SUBSCRIBE".utf8), channel]])
                var confirmed = false
                while !stopping {
                    guard
                        let reply = try session.nextReply(
                            milliseconds: confirmed ? 100 : endpoint.readTimeout.pollMilliseconds)
                    else {
                        if !confirmed {
                            throw LocalStorageError.sharedTierUnavailable("SUBSCRIBE at \(endpoint.label) got no reply")
                        }
                        continue
                    }
                    guard let parts = reply.elements, parts.count >= 3, let kind = parts[0].text else {
                        if case .error(let message) = reply {
                            throw LocalStorageError.sharedTierUnavailable(
                                "SUBSCRIBE at \(endpoint.label) failed: \(message)")
                        }
                        continue
                    }
                    switch kind.lowercased() {
                    case "subscribe":
                        confirmed = true
                        delay = firstDelay
                        report(.subscribed)
                    case "message":
                        if let payload = parts[2].bytes { report(.message(payload)) }
                    default:
                        continue
                    }
                }
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
}
