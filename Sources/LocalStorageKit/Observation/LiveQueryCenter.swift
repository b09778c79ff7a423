import Synchronization

/// Follows writes by other processes while live queries or change streams are active.
///
/// Every commit, by any process, appends its changes to the store's change log (``ChangeLog``) in its own
/// transaction. While at least one observer is active, a task checks LMDB's last transaction id every
/// `pollInterval`; when it moved, it reads the log entries after its position that another process
/// wrote, in commit order, and publishes them through the ``ObserverHub`` like this process's own
/// commits: change streams get the changes (reading the values from the store), live queries of those
/// types rerun. Own commits reach observers from the writer, through ``publish(_:logged:)``, and are skipped
/// here by their mark.
///
/// Observers get every commit in commit order, whichever process made it: deliveries are serialized, the
/// writer first delivers the other processes' commits the log holds before its own, and a poll stops at an own
/// commit the writer has not delivered yet (the writer delivers it, then the poll goes on past it).
final class LiveQueryCenter: CommitListener {
    private struct State {
        var observers = 0
        var poller: Task<Void, Never>?
        var isStopped = false
        /// The last change-log sequence read; nil until it could be read.
        var position: UInt64?
        /// The last change-log sequence of this process's commits the writer has delivered.
        var ownDelivered: UInt64 = 0
        /// LMDB's last transaction id at the last poll.
        var lastTransaction = -1
        /// Type names by number, as `meta` had them.
        var typeNames: [UInt32: String] = [:]
        /// Polls whose read of the log failed (tests and diagnostics).
        var readFailures = 0
    }

    private let environment: Environment
    private let hub: ObserverHub
    private let changeLog: ChangeLog
    private let meta: Database
    private let pollInterval: Duration
    /// The store's clock, which the poller waits on.
    private let clock: any StorageClock
    private let state = Mutex(State())
    /// Held while changes are read for delivery and delivered, so that deliveries keep commit order.
    private let delivery = Mutex(())
    private let externalChanges = Atomic<Int>(0)
    private let reruns = Atomic<Int>(0)
    private let invalidations = Atomic<Int>(0)

    /// How many times live queries of this store reran after their first result (tests read it).
    var rerunCount: Int { reruns.load(ordering: .relaxed) }

    /// Counts one rerun of a live query.
    func noteRerun() { reruns.add(1, ordering: .relaxed) }

    /// How many commits marked a live query of this store stale (counted on the writer thread before the
    /// commit's callers resume, so a test reads it right after a save returns).
    var invalidationCount: Int { invalidations.load(ordering: .relaxed) }

    /// Counts one commit that marked a live query stale.
    func noteInvalidation() { invalidations.add(1, ordering: .relaxed) }

    init(
        environment: Environment, hub: ObserverHub, changeLog: ChangeLog, meta: Database,
        pollInterval: Duration, clock: any StorageClock
    ) {
        self.clock = clock
        self.environment = environment
        self.hub = hub
        self.changeLog = changeLog
        self.meta = meta
        self.pollInterval = max(pollInterval, .milliseconds(1))
    }

    /// The number of active live queries.
    var observerCount: Int { state.withLock { $0.observers } }

    /// How many times the poller saw outside commits and told live queries to rerun.
    var externalChangeCount: Int { externalChanges.load(ordering: .relaxed) }

    /// How many polls could not read the change log.
    var readFailureCount: Int { state.withLock { $0.readFailures } }

    /// The change-log position the poller has read up to.
    var followedPosition: UInt64? { state.withLock { $0.position } }

    /// Whether the poller runs (it runs exactly while a live query is active).
    var isPolling: Bool { state.withLock { $0.poller != nil } }

    /// Registers an active observer (a live query or a change stream); the first one starts the poller.
    ///
    /// Call it before the observer's first read: outside commits before that are in its first result.
    func beginObserving() {
        state.withLock { state in
            guard !state.isStopped else { return }
            state.observers += 1
            guard state.poller == nil else { return }
            let changeLog = self.changeLog
            state.lastTransaction = environment.lastTransactionID
            do {
                state.position = try environment.read { txn in try changeLog.lastSequence(in: txn) }
            } catch {
                state.position = nil  // read at the first poll, which reruns every observer then
            }
            let interval = pollInterval
            let clock = self.clock
            // Default priority: at a lower one, a process busy with other tasks could starve the poll, and
            // other processes' writes would wait for it.
            state.poller = Task.detached { [weak self] in
                while true {
                    do {
                        try await clock.sleep(for: interval)
                    } catch {
                        return  // Cancelled: the last observer ended or the store closed.
                    }
                    guard let self, self.poll() else { return }
                }
            }
        }
    }

    /// Unregisters a live query; the last one stops the poller.
    func endObserving() {
        state.withLock { state in
            state.observers = max(0, state.observers - 1)
            if state.observers == 0 {
                state.poller?.cancel()
                state.poller = nil
            }
        }
    }

    /// Stops polling for good; after it returns the environment is not touched again. Called when the
    /// store closes, before the environment does.
    func stop() {
        state.withLock { state in
            state.isStopped = true
            state.poller?.cancel()
            state.poller = nil
        }
    }

    // MARK: - Delivery

    func hasSubscribers(_ typeName: String) -> Bool { hub.hasSubscribers(typeName) }

    /// Delivers a commit of this process: first the other processes' commits the log holds before it that no
    /// poll has delivered, then its own changes.
    func publish(_ changes: [PublishedChange], logged: ClosedRange<UInt64>?) {
        delivery.withLock { _ in
            var earlier: [PublishedChange] = []
            if let logged {
                state.withLock { state in
                    defer { state.ownDelivered = max(state.ownDelivered, logged.upperBound) }
                    guard !state.isStopped, state.poller != nil, let position = state.position,
                        position < logged.lowerBound - 1
                    else { return }
                    do {
                        earlier = try readOutsideChanges(&state, before: logged.lowerBound) ?? []
                    } catch {
                        // The next poll reads them, after this commit's changes.
                        state.readFailures += 1
                    }
                }
            }
            if !earlier.isEmpty {
                externalChanges.add(1, ordering: .relaxed)
                hub.publish(earlier)
            }
            hub.publish(changes)
        }
    }

    /// Reads and publishes the other processes' changes since the last poll; false when polling should end.
    private func poll() -> Bool {
        delivery.withLock { _ in pollDelivering() }
    }

    private func pollDelivering() -> Bool {
        let outcome: [PublishedChange]?? = state.withLock { state in
            // Under the lock, so that `stop()` never returns while the environment is being read.
            guard !state.isStopped, state.poller != nil else { return nil }
            let transaction = environment.lastTransactionID
            guard transaction != state.lastTransaction else { return .some(nil) }
            do {
                let (changes, isWhole) = try readOutsideChanges(&state)
                // A read that stopped at an own commit not delivered yet reads on at the next poll.
                if isWhole { state.lastTransaction = transaction }
                return .some(changes)
            } catch {
                // The log cannot be read now: every observed type reruns, to be safe, and the next poll
                // reads the same entries again.
                state.readFailures += 1
                return .some([])
            }
        }
        guard let outcome else { return false }
        guard let changes = outcome else { return true }
        externalChanges.add(1, ordering: .relaxed)
        if changes.isEmpty {
            hub.publishExternalChange(typeNames: hub.observedTypeNames)
        } else {
            hub.publish(changes)
        }
        return true
    }

    /// The change-log entries after the position that other processes wrote, as published changes, and
    /// whether the read reached the end of the log. It stops at an entry of this process that the writer has
    /// not delivered yet.
    private func readOutsideChanges(_ state: inout State) throws -> (changes: [PublishedChange]?, isWhole: Bool) {
        guard state.position != nil else {
            let changeLog = self.changeLog
            state.position = try environment.read { txn in try changeLog.lastSequence(in: txn) }
            return ([], true)
        }
        var isWhole = true
        let changes = try readOutsideChanges(&state, before: nil) { isWhole = false }
        return (changes, isWhole)
    }

    /// The entries other processes wrote after the position (and before `end`, when given), as published
    /// changes; nil when there are none. `stopped` is called when the read stops at an own entry not
    /// delivered yet.
    private func readOutsideChanges(
        _ state: inout State, before end: UInt64?, stopped: () -> Void = {}
    ) throws -> [PublishedChange]? {
        let changeLog = self.changeLog
        let own = changeLog.writer
        var entries: [ChangeLog.Entry] = []
        guard var position = state.position else { return nil }
        let ownDelivered = state.ownDelivered
        try environment.read { txn in
            try changeLog.forEachEntry(after: position, in: txn) { entry in
                if let end, entry.sequence >= end { return false }
                if entry.writer == own {
                    guard entry.sequence <= ownDelivered else {
                        stopped()
                        return false
                    }
                } else {
                    entries.append(entry)
                }
                position = entry.sequence
                return true
            }
        }
        state.position = position
        guard !entries.isEmpty else { return nil }
        if entries.contains(where: { state.typeNames[$0.type] == nil }) {
            let meta = self.meta
            let infos = try environment.read { txn in try TypeRegistry.all(meta: meta, txn: txn).infos }
            for info in infos { state.typeNames[info.number] = info.name }
        }
        return entries.compactMap { entry in
            guard let name = state.typeNames[entry.type] else { return nil }
            let id = String(decoding: entry.id, as: UTF8.self)
            let kind: PublishedChange.Kind =
                switch entry.kind {
                case .inserted: .externalInserted(id)
                case .updated: .externalUpdated(id)
                case .deleted: .deleted(id)
                case .expired: .expired(id)
                case .cleared: .cleared
                case .touched: .touched
                }
            return PublishedChange(typeName: name, kind: kind)
        }
    }
}
