import Dispatch
import Foundation
import Synchronization

/// The command connection to the shared tier: one socket, owned by one thread, that pipelines every
/// request queued while it was busy (like the writer's group commit) and reconnects with backoff.
///
/// A request is a list of commands answered in order. When the connection fails, the requests in flight fail
/// with `sharedTierUnavailable`; the next request reconnects at once, and after a failed attempt later ones
/// fail fast until the backoff delay (doubling up to the configured maximum) has passed, so a write during an
/// outage throws at once instead of waiting for a connect timeout.
final class RESPConnection: @unchecked Sendable {
    // @unchecked: `queue`, `isStopping` and `thread` are only touched under `condition`; `session`,
    // `nextAttempt`, `delay` and `lastFailure` only on the connection's own thread.
    private struct Request {
        let commands: [[[UInt8]]]
        let finish: @Sendable (Result<[RESPValue], LocalStorageError>) -> Void
    }

    let endpoint: RESPEndpoint
    private let firstDelay: Duration
    private let maxDelay: Duration
    private let condition = NSCondition()
    private var queue: [Request] = []
    private var isStopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    private var session: RESPSession?
    private var nextAttempt = ContinuousClock.now
    private var delay: Duration
    private var lastFailure: LocalStorageError?
    /// Counts connections opened, so tests and logs can see reconnects.
    private let connectionsOpened = Mutex(0)

    init(endpoint: RESPEndpoint, reconnectDelay: Duration, maxReconnectDelay: Duration, name: String) {
        self.endpoint = endpoint
        firstDelay = reconnectDelay
        maxDelay = max(reconnectDelay, maxReconnectDelay)
        delay = reconnectDelay
        let thread = Thread { [self] in run() }
        thread.name = name
        self.thread = thread
        thread.start()
    }

    /// How many times a connection was opened.
    var connectionCount: Int { connectionsOpened.withLock { $0 } }

    /// Fails what is queued and ends the thread.
    func stop() {
        condition.lock()
        isStopping = true
        // Called from its own thread (cannot happen today, but must not deadlock): just let the loop end.
        let started = thread.map { $0 != Thread.current } ?? false
        thread = nil
        condition.signal()
        condition.unlock()
        if started { finished.wait() }
    }

    /// Sends `commands` as one pipeline and returns one reply per command (error replies included).
    ///
    /// - Throws: `sharedTierUnavailable` when the server cannot be reached or does not reply in time.
    func send(_ commands: [[[UInt8]]]) async throws(LocalStorageError) -> [RESPValue] {
        let result = await withCheckedContinuation {
            (
                continuation: CheckedContinuation<
                    Result<
                        [RESPValue],
                        LocalStorageError
                    >, Never
                >
            ) in
            enqueue(Request(commands: commands, finish: { continuation.resume(returning: $0) }))
        }
        return try result.get()
    }

    /// One command; an error reply throws `sharedTierUnavailable` naming the command.
    func call(_ command: [[UInt8]]) async throws(LocalStorageError) -> RESPValue {
        let reply = try await send([command])[0]
        if case .error(let message) = reply {
            let name = command.first.map { String(decoding: $0, as: UTF8.self) } ?? "?"
            throw .sharedTierUnavailable("\(name) at \(endpoint.label) failed: \(message)")
        }
        return reply
    }

    private func enqueue(_ request: Request) {
        condition.lock()
        if isStopping {
            condition.unlock()
            request.finish(.failure(.sharedTierUnavailable("the store is closing")))
            return
        }
        queue.append(request)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !isStopping { condition.wait() }
            if isStopping {
                let left = queue
                queue = []
                condition.unlock()
                for request in left { request.finish(.failure(.sharedTierUnavailable("the store is closing"))) }
                session?.close()
                session = nil
                finished.signal()
                return
            }
            // Drain what is queued into one pipeline, capped so that one write stays reasonable.
            var batch: [Request] = []
            var commandCount = 0
            while !queue.isEmpty && (batch.isEmpty || commandCount + queue[0].commands.count <= 1024) {
                let request = queue.removeFirst()
                commandCount += request.commands.count
                batch.append(request)
            }
            condition.unlock()
            process(batch)
        }
    }

    private func process(_ batch: [Request]) {
        let session: RESPSession
        do {
            session = try openSession()
        } catch {
            for request in batch { request.finish(.failure(error)) }
            return
        }
        do {
            let replies = try session.roundTrip(batch.flatMap(\.commands))
            var offset = 0
            for request in batch {
                let count = request.commands.count
                request.finish(.success(Array(replies[offset..<(offset + count)])))
                offset += count
            }
        } catch {
            // The connection is in an unknown state: drop it; the next request reconnects.
            session.close()
            self.session = nil
            nextAttempt = ContinuousClock.now
            for request in batch { request.finish(.failure(error)) }
        }
    }

    private func openSession() throws(LocalStorageError) -> RESPSession {
        if let session { return session }
        let now = ContinuousClock.now
        if now < nextAttempt, let lastFailure {
            throw .sharedTierUnavailable("\(Self.reason(of: lastFailure)) (next attempt in \(nextAttempt - now))")
        }
        do {
            let opened = try RESPSession(endpoint: endpoint)
            session = opened
            delay = firstDelay
            lastFailure = nil
            connectionsOpened.withLock { $0 += 1 }
            return opened
        } catch {
            lastFailure = error
            nextAttempt = ContinuousClock.now + delay
            delay = min(delay * 2, maxDelay)
            throw error
        }
    }

    static func reason(of error: LocalStorageError) -> String {
        if case .sharedTierUnavailable(let reason) = error { return reason }
        return "\(error)"
    }
}
