import Foundation
import Synchronization

/// The command connection to the shared tier: one socket, owned by one thread, that pipelines every
/// request queued while it was busy (like the writer's group commit) and reconnects with backoff.
///
/// A request is a list of commands answered in order. When the connection fails, the requests in flight fail
/// with `sharedTierUnavailable` (saying the outcome is unknown when the request had been sent); the next
/// request reconnects at once, and after a failed attempt later ones fail fast until the backoff delay
/// (doubling up to the configured maximum, measured on `clock`) has passed, so a write during an outage throws
/// at once instead of waiting for a connect timeout. ``retrySoon()`` lifts the backoff. A server that stays silent
/// for `readTimeout` fails the requests queued behind the one it did not answer, unsent, so that no caller waits
/// for more than one `readTimeout` of silence (the next request tries again at once).
final class RESPConnection: @unchecked Sendable {
    // @unchecked: `retryNow`, `dropSession` and `silences` are only touched under the worker's lock (the queue lives
    // in the worker); `session`, `nextAttempt`, `delay`, `lastFailure` and `lastSilence` only on the worker's thread.
    private struct Request {
        let commands: [[[UInt8]]]
        /// How much longer than `readTimeout` the server may take before it answers (a script writing many
        /// records runs that long before its reply's first byte).
        var extraTime: Duration = .zero
        /// How many silences (``RESPConnection/silences``) the connection had met when the request was queued.
        var silencesBefore = 0
        let finish: @Sendable (Result<[RESPValue], LocalStorageError>) -> Void
    }

    let endpoint: RESPEndpoint
    let clock: any StorageClock
    private let firstDelay: Duration
    private let maxDelay: Duration
    /// The connection's thread and queue.
    private let worker: SerialWorker<Request>
    private var retryNow = false
    private var dropSession = false
    /// How many pipelines the server left unanswered for their whole timeout; a request queued before the last
    /// of them fails unsent (``queuedBehindSilence(_:)``).
    private var silences = 0
    /// What the server did not answer last (for the reason of the requests failed unsent behind it).
    private var lastSilence = ""

    private var session: RESPSession?
    private var nextAttempt = Duration.zero
    private var delay: Duration
    private var lastFailure: LocalStorageError?
    /// Counts connections opened, so tests and logs can see reconnects.
    private let connectionsOpened = Mutex(0)
    /// Requests written to the server whose replies have not come yet, and how long their pipeline may wait.
    private let awaiting = Mutex((count: 0, timeout: Duration.zero))

    init(
        endpoint: RESPEndpoint, reconnectDelay: Duration, maxReconnectDelay: Duration,
        clock: any StorageClock, name: String
    ) {
        self.endpoint = endpoint
        self.clock = clock
        firstDelay = reconnectDelay
        maxDelay = max(reconnectDelay, maxReconnectDelay)
        delay = reconnectDelay
        worker = SerialWorker(name: name)
        worker.start(
            take: RESPConnection.nextPipeline, run: { [self] batch in run(batch) },
            leftOver: { left in
                for request in left { request.finish(.failure(.sharedTierUnavailable("the store is closing"))) }
            },
            atEnd: { [self] in
                session?.close()
                session = nil
            })
    }

    /// How many times a connection was opened.
    var connectionCount: Int { connectionsOpened.withLock { $0 } }

    /// How many requests were written to the server and wait for their replies (tests wait for one to be).
    var requestsAwaitingReply: Int { awaiting.withLock { $0.count } }

    /// How long the pipeline written to the server may wait for its reply, while one waits (tests see a script's
    /// allowance in it).
    var timeoutAwaitingReply: Duration? { awaiting.withLock { $0.count > 0 ? $0.timeout : nil } }

    /// How many requests are queued and not yet taken for a pipeline (tests wait for one to be).
    var requestsQueued: Int { worker.queuedCount }

    /// Lets the next request try to connect at once, whatever the backoff says (a read is waiting).
    func retrySoon() {
        worker.locked { retryNow = true }
    }

    /// Makes the next request open a fresh connection (the server was seen to go away, so the open one is
    /// most likely dead: a request on it would fail after it was sent).
    func reconnectNextTime() {
        worker.locked { dropSession = true }
    }

    /// Fails what is queued and ends the thread (called from its own thread, it does not wait for it).
    func stop() {
        worker.stop()
    }

    /// Sends `commands` as one pipeline and returns one reply per command (error replies included); the server
    /// may take `extraTime` longer than `readTimeout` to start answering.
    ///
    /// - Throws: `sharedTierUnavailable` when the server cannot be reached or does not reply in time.
    func send(_ commands: [[[UInt8]]], extraTime: Duration = .zero) async throws(LocalStorageError) -> [RESPValue] {
        let result = await withCheckedContinuation {
            (
                continuation: CheckedContinuation<
                    Result<
                        [RESPValue],
                        LocalStorageError
                    >, Never
                >
            ) in
            enqueue(
                Request(commands: commands, extraTime: extraTime, finish: { continuation.resume(returning: $0) }))
        }
        return try result.get()
    }

    /// ``send(_:extraTime:)`` for requests whose caller may stop waiting: reads, which change nothing on the server,
    /// and a lease's acquisition (whose caller gives back a lease the request may have taken). A caller whose
    /// task is cancelled stops waiting at once (the reply, when it comes, is dropped), where a write waits for its
    /// outcome.
    ///
    /// - Throws: `sharedTierUnavailable` as ``send(_:extraTime:)`` does, and saying so for a cancelled caller.
    func sendUnlessCancelled(_ commands: [[[UInt8]]]) async throws(LocalStorageError) -> [RESPValue] {
        let slot = ReplySlot()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<[RESPValue], LocalStorageError>, Never>) in
                if slot.install(continuation) {
                    enqueue(Request(commands: commands, finish: { slot.finish($0) }))
                }
            }
        } onCancel: {
            slot.finish(.failure(.sharedTierUnavailable(Self.cancelledByCaller + "before \(endpoint.label) answered")))
        }
        return try result.get()
    }

    /// How the reason of a `sharedTierUnavailable` begins when the caller's cancellation, not the server, ended the
    /// request (``isCancelledByCaller(_:)``).
    static let cancelledByCaller = "cancelled by its caller "

    /// Whether `error` is a request or a wait that its caller's cancellation ended.
    static func isCancelledByCaller(_ error: any Error) -> Bool {
        guard case .sharedTierUnavailable(let reason)? = error as? LocalStorageError else { return false }
        return reason.hasPrefix(cancelledByCaller)
    }

    /// Whether the request that threw `error` may have been applied by the server although its caller learnt
    /// nothing: its caller stopped waiting (``isCancelledByCaller(_:)``), or it was sent and no reply came.
    static func mayHaveBeenApplied(_ error: any Error) -> Bool {
        guard case .sharedTierUnavailable(let reason)? = error as? LocalStorageError else { return false }
        return reason.hasPrefix(cancelledByCaller) || reason.hasSuffix(RESPSession.unknownOutcome)
    }

    /// One command; an error reply throws `sharedTierUnavailable` naming the command.
    func call(_ command: [[UInt8]]) async throws(LocalStorageError) -> RESPValue {
        try checked(try await send([command])[0], of: command)
    }

    /// One command as ``sendUnlessCancelled(_:)`` sends it; an error reply throws `sharedTierUnavailable` naming
    /// the command.
    func callUnlessCancelled(_ command: [[UInt8]]) async throws(LocalStorageError) -> RESPValue {
        try checked(try await sendUnlessCancelled([command])[0], of: command)
    }

    private func checked(_ reply: RESPValue, of command: [[UInt8]]) throws(LocalStorageError) -> RESPValue {
        if case .error(let message) = reply {
            let name = command.first.map { String(decoding: $0, as: UTF8.self) } ?? "?"
            throw .sharedTierUnavailable("\(name) at \(endpoint.label) failed: \(message)")
        }
        return reply
    }

    private func enqueue(_ request: Request) {
        var request = request
        request.silencesBefore = worker.locked { silences }
        guard !worker.submit(request) else { return }
        request.finish(.failure(.sharedTierUnavailable("the store is closing")))
    }

    /// What is queued, drained into one pipeline, capped so that one write stays reasonable.
    private static func nextPipeline(_ queue: inout [Request]) -> [Request] {
        var batch: [Request] = []
        var commandCount = 0
        while !queue.isEmpty && (batch.isEmpty || commandCount + queue[0].commands.count <= 1024) {
            let request = queue.removeFirst()
            commandCount += request.commands.count
            batch.append(request)
        }
        return batch
    }

    /// Runs one pipeline on the worker's thread, after the backoff lift or fresh connection asked for.
    private func run(_ batch: [Request]) {
        let (retry, drop) = worker.locked {
            defer { (retryNow, dropSession) = (false, false) }
            return (retryNow, dropSession)
        }
        if retry { nextAttempt = clock.uptime() }
        if drop {
            session?.close()
            session = nil
        }
        process(batch)
    }

    private func process(_ batch: [Request]) {
        let (behindSilence, batch) = queuedBehindSilence(batch)
        for request in behindSilence {
            request.finish(.failure(.sharedTierUnavailable(Self.notSentAfterSilence + lastSilence)))
        }
        guard !batch.isEmpty else { return }
        let session: RESPSession
        do {
            session = try openSession()
        } catch {
            for request in batch { request.finish(.failure(error)) }
            return
        }
        let timeout = endpoint.readTimeout + batch.reduce(.zero) { $0 + $1.extraTime }
        do {
            let commands = batch.flatMap(\.commands)
            var wasSent = false
            defer { if wasSent { awaiting.withLock { $0.count -= batch.count } } }
            let replies = try session.roundTrip(
                commands, timeout: timeout,
                sent: {
                    wasSent = true
                    awaiting.withLock { $0 = ($0.count + batch.count, timeout) }
                })
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
            nextAttempt = clock.uptime()
            if RESPSession.isSilence(error) {
                lastSilence = "\(endpoint.label) did not reply to the request before it within \(timeout)"
                worker.locked { silences += 1 }
            }
            for request in batch { request.finish(.failure(error)) }
        }
    }

    /// How the reason of a request failed unsent begins, because the server did not answer the request before
    /// it for its whole timeout while it waited in the queue.
    static let notSentAfterSilence = "not sent, since "

    /// Whether `error` failed a request unsent behind one the server did not answer (``notSentAfterSilence``).
    static func wasQueuedBehindSilence(_ error: LocalStorageError) -> Bool {
        guard case .sharedTierUnavailable(let reason) = error else { return false }
        return reason.hasPrefix(notSentAfterSilence)
    }

    /// `batch` parted into the requests queued before the server's last silence, which have waited for it
    /// already and fail unsent, and the rest, which get a round trip of their own.
    private func queuedBehindSilence(_ batch: [Request]) -> (failed: [Request], kept: [Request]) {
        let silences = worker.locked { self.silences }
        let failed = batch.filter { $0.silencesBefore < silences }
        return failed.isEmpty ? ([], batch) : (failed, batch.filter { $0.silencesBefore >= silences })
    }

    private func openSession() throws(LocalStorageError) -> RESPSession {
        if let session {
            // A connection the server closed while it was idle is replaced before a request goes out on it:
            // sent on it, the request would fail with an unknown outcome though the server never saw it.
            guard session.isStale else { return session }
            session.close()
            self.session = nil
        }
        let now = clock.uptime()
        if now < nextAttempt, let lastFailure {
            let wait = (nextAttempt - now).roundedToMilliseconds
            throw .sharedTierUnavailable("\(Self.reason(of: lastFailure)) (next attempt in \(wait))")
        }
        do {
            let opened = try RESPSession(endpoint: endpoint, clock: clock)
            session = opened
            delay = firstDelay
            lastFailure = nil
            connectionsOpened.withLock { $0 += 1 }
            return opened
        } catch {
            lastFailure = error
            nextAttempt = clock.uptime() + delay
            delay = min(delay * 2, maxDelay)
            throw error
        }
    }

    static func reason(of error: LocalStorageError) -> String {
        if case .sharedTierUnavailable(let reason) = error { return reason }
        return "\(error)"
    }
}

/// Where one cancellable request's outcome goes (``RESPConnection/sendUnlessCancelled(_:)``): the first of its reply and its
/// caller's cancellation resumes the caller; the other finds it done.
private final class ReplySlot: Sendable {
    typealias Outcome = Result<[RESPValue], LocalStorageError>
    private let state = Mutex<(continuation: CheckedContinuation<Outcome, Never>?, outcome: Outcome?)>((nil, nil))

    /// Takes the caller's continuation; false (and the continuation resumed) when the outcome is already known:
    /// the caller was cancelled before its request went out, so it goes nowhere.
    func install(_ continuation: CheckedContinuation<Outcome, Never>) -> Bool {
        let known = state.withLock { state -> Outcome? in
            if let outcome = state.outcome { return outcome }
            state.continuation = continuation
            return nil
        }
        guard let known else { return true }
        continuation.resume(returning: known)
        return false
    }

    /// Resumes the caller with `outcome`, unless it was resumed already.
    func finish(_ outcome: Result<[RESPValue], LocalStorageError>) {
        let continuation = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: outcome)
    }
}
