import Foundation
import Synchronization

/// A store's shared tier: the Redis/Valkey server that is the source of truth for every instance on a
/// namespace, with this store as the instance's near cache (docs/DESIGN.md, "Sharing a cache between hosts").
///
/// - Writes go to the server first (one script: record, index members, expiry, change notice), then into
///   the local store with the very bytes the server holds (`SharedTier+Writes.swift`).
/// - Every change gets a sequence number. The applier follows the server's change channel in sequence order
///   and applies each change to the local store (change streams and live queries see it like a local write)
///   (`SharedTier+Replication.swift`).
/// - **The resynchronisation rule.** While the subscription is down, local records are served for at most
///   ``SharedTierConfiguration/maxStaleness`` after the instance last heard from the server, and local misses
///   throw (`SharedTier+Gates.swift`). Once it is back, no read is served until the instance has caught up: it
///   reads the server's sequence, re-reads from the server every record the change log names after its own
///   position, and applies them. When the log no longer reaches back that far (or the server lost its data,
///   or this instance never was in sync: a fresh start), it drops every local record instead and starts from
///   the server's position.
///
/// Every time it reads or waits on comes from the store's clock (`core.clock`), which it hands to the RESP
/// connections too.
final class SharedTier: Sendable {
    enum Phase: Sendable, Equatable {
        /// Never in sync yet (the first connection is being made).
        case connecting
        /// Subscribed; catching up before serving.
        case syncing
        /// Following the change channel.
        case live
        /// The subscription is lost; local records serve (within the staleness bound), local misses throw.
        case down
    }

    /// A task waiting for the state to reach a condition.
    struct Waiter {
        let until: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<Void, Never>
        /// Set for a wait that ends when its task is cancelled (``waitUnlessCancelled(until:)``).
        var number: UInt64? = nil
    }

    struct State {
        /// Whether every change received from the server is committed to the local store.
        var isCommittedLocally: Bool { (receivedSeq ?? .min) <= (committedSeq ?? .min) }

        /// Notes that the server was heard from at `now`: `lastHeard` when everything received is committed,
        /// else once the changes received by now are (``noteLocalCommit(through:)``). Changes received after
        /// the hearing do not hold it back: under a steady stream of notices something received always waits for
        /// the writer (/work/review-76.md #1).
        mutating func heard(at now: Duration) {
            guard phase == .live else { return }
            guard let received = receivedSeq, !isCommittedLocally else {
                lastHeard = max(lastHeard ?? now, now)
                return
            }
            if let last = pendingHearings.last, last.through == received {
                // A later hearing vouching for the same changes replaces the earlier one.
                pendingHearings[pendingHearings.count - 1].at = max(last.at, now)
                return
            }
            if pendingHearings.count == Self.pendingHearingsLimit {
                // The two oldest merge conservatively: the earlier time, counted once the later changes are in.
                let first = pendingHearings.removeFirst()
                pendingHearings[0].at = min(first.at, pendingHearings[0].at)
            }
            pendingHearings.append((at: now, through: received))
        }

        /// How many hearings wait for a local commit at most (the oldest merge beyond).
        static let pendingHearingsLimit = 16

        /// When the latest hearing that waits for a local commit came (nil: none waits).
        var latestPendingHearing: Duration? { pendingHearings.last?.at }

        /// Notes the local commit of the changes through `sequence`; the hearings waiting on those changes count
        /// now.
        mutating func noteLocalCommit(through sequence: Int64?) {
            committedSeq = sequence
            guard let committed = sequence else { return }
            var counted: Duration?
            while let first = pendingHearings.first, first.through <= committed {
                pendingHearings.removeFirst()
                counted = max(counted ?? first.at, first.at)
            }
            guard let counted else { return }
            if phase == .live { lastHeard = max(lastHeard ?? counted, counted) }
            outcomes += 1
        }

        var phase: Phase = .connecting
        /// The last sequence the local store reflects (set inside the writer, in commit order).
        var appliedSeq: Int64?
        /// A write of this instance got sequence 1 after the local store reflected later ones: the server's
        /// data was flushed or lost while connected (``SharedTier/noteIssued(_:appliedBefore:)``).
        var countStartedAnew = false
        /// The last sequence the applier took from the channel or a catch-up (ahead of `appliedSeq` while its
        /// work waits in the writer queue).
        var receivedSeq: Int64?
        /// The server's `{ns}:epoch` at the last catch-up (nil: none, or the namespace predates epochs), and its
        /// sequence then: from sequence 0 (no history yet), the epoch that appears next is the one followed.
        var epoch: (value: [UInt8]?, sequence: Int64)?
        /// The change at the received position as this instance took it (``SharedTierNotice/identity``): a
        /// catch-up that finds another change at that sequence in the log knows the server lost changes and
        /// counted past them again (a restart from an older snapshot, a failover to a replica behind).
        var lastEntry: (sequence: Int64, identity: Int)?
        var lastError: LocalStorageError?
        /// When (the clock's uptime) the instance last heard from the server while in sync, with every change it
        /// had received by then committed to the local store; nil: never. (A read after a pause found a notice
        /// waiting with the heartbeat, counted itself in sync, and served the copy the notice was about to
        /// replace: /work/trial76.md #2.)
        var lastHeard: Duration?
        /// Hearings not counted in `lastHeard` yet, oldest first, each with the last change received before it:
        /// those changes wait in the writer's queue.
        var pendingHearings: [(at: Duration, through: Int64)] = []
        /// The applied position as of the last local commit that moved it: what a read's snapshot holds.
        var committedSeq: Int64?
        /// How many attempts to reach the server ended (either way): a waiting read waits for the next one.
        var outcomes = 0
        /// When the last failed attempt ended.
        var lastFailureAt: Duration?
        var isStopped = false
        /// The namespace's key check value matched this store's keys (``SharedTier/checkNamespaceKey()``).
        var namespaceKeyChecked = false
        var catchUps = 0
        /// Calls of ``SharedTier/awaitServable(after:)`` that waited: live queries whose rerun found the tier unavailable (tests read it).
        var servableWaits = 0
        var drops = 0
        var schemasByName: [ExactName: TypeSchema] = [:]
        /// The records the last changes applied touched, for fills to check against.
        var recentChanges = SharedTierRecentChanges()
        /// Records whose local copy is newer than the applied position (an own write, a fill): a change of the
        /// record at or before the copy, applied later, would take the copy back in time (a process's own
        /// `save(v1)`, `save(v2)`, then `v1`'s notice), so it is skipped (and, after a fill, only announced).
        var localAhead: [ExactName: LocalCopyAhead] = [:]
        /// Types this instance cleared (`deleteAll`, admitted locally) ahead of the applied position, with the
        /// clear's sequence: the puts and deletes of the type before it, applied later, would bring back records
        /// the clear removed, so they are skipped, and the clear's own notice does not run it again.
        var clearedAhead: [ExactName: Int64] = [:]
        /// The update time of this instance's last write on the server (``SharedTier/nextWriteTime()``).
        var lastWriteTime: Int64 = .min
        var waiters: [Waiter] = []
        var lastWaiterNumber: UInt64 = 0
    }

    let settings: SharedTierConfiguration
    let endpoint: RESPEndpoint
    let layout: SharedTierLayout
    let connection: RESPConnection
    /// This instance's random id: it marks the notices it writes.
    let sender: [UInt8]
    let core: StoreCore
    let logger: (any StorageLogger)?
    let state = Mutex(State())
    let scriptHashes = Mutex<[String: [UInt8]]>([:])
    /// How long a script may spend on each record it writes beyond `readTimeout`; tests about that allowance
    /// widen it, so that a loaded machine cannot outrun it.
    let scriptTimePerRecord = Mutex(SharedTier.defaultScriptTimePerRecord)
    /// Tests only: awaited by the follow loop before it handles each change notice (holds the applier back).
    let beforeNotice = Mutex<(@Sendable () async -> Void)?>(nil)
    /// Tests only: called just before a load's lease request is sent (a test stops the server there).
    let beforeLeaseRequest = Mutex<(@Sendable () -> Void)?>(nil)
    /// Tests only: how many of the next give-backs and settles of load leases fail before they are sent, as to a
    /// server that cannot be reached.
    let failingGiveBacks = Mutex(0)
    /// The follow loop's events: the subscriber's, and ``SubscriberEvent/catchUp`` from the tier itself.
    let events: AsyncStream<SubscriberEvent>.Continuation
    /// How many events wait for the follow loop at most (the oldest go first).
    static let eventBuffer = 4_096
    let subscriber: RESPSubscriber
    private let applier = Mutex<Task<Void, Never>?>(nil)

    /// The store's clock.
    var clock: any StorageClock { core.clock }

    /// Starts connecting (in the background) to the server `settings` names.
    ///
    /// - Throws: `sharedTierUnavailable` for a URL or namespace that cannot work (see
    ///   ``SharedTierConfiguration``); nothing is connected yet when it returns.
    init(settings: SharedTierConfiguration, core: StoreCore, logger: (any StorageLogger)?) throws(LocalStorageError) {
        let endpoint = try settings.endpoint()
        self.settings = settings
        self.endpoint = endpoint
        self.core = core
        self.logger = logger
        layout = SharedTierLayout(namespace: settings.namespace)
        sender = (0..<16).map { _ in UInt8.random(in: 0...255) }
        connection = RESPConnection(
            endpoint: endpoint, reconnectDelay: settings.reconnectDelay,
            maxReconnectDelay: settings.maxReconnectDelay, clock: core.clock,
            name: "LocalStorageKit.sharedTier.commands")
        // Bounded: while a catch-up retries (the server refuses it, the local store is full), notices with whole
        // records would pile up. A notice dropped shows as a gap in the sequence, which catches up anyway.
        let (stream, continuation) = AsyncStream<SubscriberEvent>.makeStream(
            bufferingPolicy: .bufferingNewest(Self.eventBuffer))
        events = continuation
        subscriber = RESPSubscriber(
            endpoint: endpoint, channel: layout.channel, reconnectDelay: settings.reconnectDelay,
            maxReconnectDelay: settings.maxReconnectDelay, heartbeat: settings.maxStaleness / 2,
            clock: core.clock, name: "LocalStorageKit.sharedTier.subscriber",
            report: { continuation.yield($0) })
        logger?.log(
            level: .info, message: "Connecting to the shared tier",
            metadata: ["server": settings.redactedURL, "namespace": settings.namespace])
        let task = Task { [self] in await follow(stream) }
        applier.withLock { $0 = task }
    }

    /// Stops following the server and closes both connections. Called when the store closes.
    func stop() {
        subscriber.stop()
        events.finish()
        applier.withLock { $0?.cancel() }
        connection.stop()
        update { $0.isStopped = true }
    }

    var phase: Phase { state.withLock { $0.phase } }

    // MARK: - State changes and waiting for them

    /// Changes the state and resumes every waiter whose condition now holds (all of them once stopped).
    @discardableResult
    func update<R: Sendable>(_ body: (inout State) -> R) -> R {
        let (result, ready) = state.withLock { state -> (R, [CheckedContinuation<Void, Never>]) in
            let result = body(&state)
            var ready: [CheckedContinuation<Void, Never>] = []
            var waiting: [Waiter] = []
            for waiter in state.waiters {
                if state.isStopped || waiter.until(state) {
                    ready.append(waiter.continuation)
                } else {
                    waiting.append(waiter)
                }
            }
            state.waiters = waiting
            return (result, ready)
        }
        for continuation in ready { continuation.resume() }
        return result
    }

    /// ``wait(until:)`` that also ends when the calling task is cancelled.
    func waitUnlessCancelled(until condition: @escaping @Sendable (State) -> Bool) async {
        let number = state.withLock { state -> UInt64 in
            state.lastWaiterNumber += 1
            return state.lastWaiterNumber
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let holds = state.withLock { state -> Bool in
                    if state.isStopped || Task.isCancelled || condition(state) { return true }
                    state.waiters.append(Waiter(until: condition, continuation: continuation, number: number))
                    return false
                }
                if holds { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.number == number }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            continuation?.resume()
        }
    }

    /// Suspends until `condition` holds for the state (or the tier stops); returns at once when it does.
    func wait(until condition: @escaping @Sendable (State) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let holds = state.withLock { state -> Bool in
                if state.isStopped || condition(state) { return true }
                state.waiters.append(Waiter(until: condition, continuation: continuation))
                return false
            }
            if holds { continuation.resume() }
        }
    }
}

/// A local copy of a record newer than the shared tier's applied position (``SharedTier/State/localAhead``).
struct LocalCopyAhead {
    /// The server's position the copy reflects.
    var sequence: Int64
    /// For a copy a fill wrote: whether the notices announced since the fill show the record live (the first
    /// skipped put is an insert for this instance's observers, a later one an update); nil for an own write.
    var announcedLive: Bool?
    /// The record as the last skipped put announced it (nil: none yet, or a delete since): a later put that
    /// differs from it in its expiry alone is a new time to live, not an update.
    var announcedRecord: [UInt8]? = nil
}

/// An expected record changed on the shared tier between a read and the write based on it.
struct SharedTierConflict: Error {
    let message: String
}

extension SharedTier.State {
    /// Whether this instance's own change `sequence` may be written locally now: not while a catch-up runs
    /// (it brings the change), and not when the local store already reflects it or a later change.
    func admitsOwn(_ sequence: Int64) -> Bool { phase != .syncing && (appliedSeq ?? Int64.min) < sequence }

    /// Notes that the local copy of `id` of `type` reflects the server's state at `sequence` (an own write, a
    /// fill) before the applier got there.
    ///
    /// An own write announced itself; a fill announced nothing (a record the server held all along is no
    /// change), so the notices it got ahead of are still announced when the applier skips them.
    mutating func noteLocalAhead(type: String, id: String, at sequence: Int64, byFill: Bool = false) {
        let record = ExactName(SharedTierRecentChanges.record(type: type, id: id))
        let earlier = localAhead[record]
        localAhead[record] = LocalCopyAhead(
            sequence: max(earlier?.sequence ?? Int64.min, sequence),
            announcedLive: byFill ? (earlier?.announcedLive ?? false) : nil,
            announcedRecord: byFill ? earlier?.announcedRecord : nil)
    }

    /// Forgets the copies of `type` noted ahead: a clear of the type applied removed them, so the notices of
    /// the writes that made them must apply again (they bring the records back).
    mutating func forgetLocalAhead(ofType type: String) {
        guard !localAhead.isEmpty else { return }
        let prefix = SharedTierRecentChanges.record(type: type, id: "")
        localAhead = localAhead.filter { !$0.key.name.utf8.starts(with: prefix.utf8) }
    }

    /// Forgets the copies the applied position has reached: later changes apply to them as to any other.
    mutating func forgetLocalAhead(through applied: Int64) {
        if !clearedAhead.isEmpty { clearedAhead = clearedAhead.filter { $0.value > applied } }
        guard !localAhead.isEmpty else { return }
        localAhead = localAhead.filter { $0.value.sequence > applied }
    }
}
