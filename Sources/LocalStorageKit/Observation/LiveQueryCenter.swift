import Synchronization

/// Notices writes by other processes while live queries are active, and tells them to rerun.
///
/// LMDB's last transaction id (`mdb_env_info`) moves with every commit by any process. The writer
/// counts this process's own commits, so `lastTransactionID - ownCommits` moves only when someone
/// else committed. While at least one live query is active, a task polls that difference every
/// `pollInterval` and, when it moved, publishes an external change for every observed type through
/// the ``ObserverHub``. Own commits already reach live queries directly from the writer.
///
/// The difference is read without stopping the writer, so a commit in flight can make it move when
/// nobody else wrote (a harmless extra rerun that emits nothing); any real outside commit changes it
/// for good, so it is never missed.
final class LiveQueryCenter: Sendable {
    private struct State {
        var observers = 0
        var poller: Task<Void, Never>?
        var isStopped = false
        /// `lastTransactionID - ownCommits` at the last poll.
        var outsideCommits = 0
    }

    private let environment: Environment
    private let hub: ObserverHub
    private let pollInterval: Duration
    private let ownCommits: @Sendable () -> Int
    private let state = Mutex(State())
    private let externalChanges = Atomic<Int>(0)

    init(environment: Environment, hub: ObserverHub, pollInterval: Duration,
         ownCommits: @escaping @Sendable () -> Int) {
        self.environment = environment
        self.hub = hub
        self.pollInterval = max(pollInterval, .milliseconds(1))
        self.ownCommits = ownCommits
    }

    /// The number of active live queries.
    var observerCount: Int { state.withLock { $0.observers } }

    /// How many times the poller saw outside commits and told live queries to rerun.
    var externalChangeCount: Int { externalChanges.load(ordering: .relaxed) }

    /// Whether the poller runs (it runs exactly while a live query is active).
    var isPolling: Bool { state.withLock { $0.poller != nil } }

    /// Registers an active live query; the first one starts the poller.
    ///
    /// Call it before the query's first run: outside commits before that are in the first result.
    func beginObserving() {
        state.withLock { state in
            guard !state.isStopped else { return }
            state.observers += 1
            guard state.poller == nil else { return }
            state.outsideCommits = outsideCommitMark()
            let interval = pollInterval
            state.poller = Task.detached(priority: .utility) { [weak self] in
                while true {
                    do {
                        try await Task.sleep(for: interval)
                    } catch {
                        return // Cancelled: the last live query ended or the store closed.
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

    /// Checks for outside commits once; false when polling should end.
    private func poll() -> Bool {
        let changed: Bool? = state.withLock { state in
            // Under the lock, so that `stop()` never returns while the environment is being read.
            guard !state.isStopped, state.poller != nil else { return nil }
            let mark = outsideCommitMark()
            defer { state.outsideCommits = mark }
            return mark != state.outsideCommits
        }
        guard let changed else { return false }
        if changed {
            externalChanges.add(1, ordering: .relaxed)
            hub.publishExternalChange(typeNames: hub.observedTypeNames)
        }
        return true
    }

    /// Commits by other processes so far, up to a constant: read own commits first, so that every
    /// commit counted there is already in the transaction id.
    private func outsideCommitMark() -> Int {
        let own = ownCommits()
        return environment.lastTransactionID &- own
    }
}
