import Synchronization

/// Notices writes by other processes while live queries are active, and tells them to rerun.
///
/// LMDB's last transaction id (`mdb_env_info`) moves with every commit by any process. The writer
/// counts this process's own commits, so `lastTransactionID - ownCommits` moves only when someone
/// else committed. While at least one live query is active, a task polls that difference every
/// `pollInterval` and, when it moved, publishes an external change for every observed type through
/// the ``ObserverHub``. Own commits already reach live queries directly from the writer.
///
/// The two numbers are read together only while no write transaction of this process is under way
/// (``Writer/readWhileIdle(_:)``, a seqlock); a poll that meets one skips and the next poll decides,
/// so the difference is exact: no missed outside commit, no rerun for an own commit.
final class LiveQueryCenter: Sendable {
    private struct State {
        var observers = 0
        var poller: Task<Void, Never>?
        var isStopped = false
        /// `lastTransactionID - ownCommits` at the last settled poll; nil when unknown (reruns at the
        /// next settled poll, to be safe).
        var outsideCommits: Int?
    }

    private let environment: Environment
    private let hub: ObserverHub
    private let writer: Writer
    private let pollInterval: Duration
    private let state = Mutex(State())
    private let externalChanges = Atomic<Int>(0)

    init(environment: Environment, hub: ObserverHub, writer: Writer, pollInterval: Duration) {
        self.environment = environment
        self.hub = hub
        self.writer = writer
        self.pollInterval = max(pollInterval, .milliseconds(1))
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
            guard let mark = outsideCommitMark() else { return false }  // a write under way: next time
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

    /// Commits by other processes so far, up to a constant; nil while this process is writing.
    private func outsideCommitMark() -> Int? {
        let environment = self.environment
        return writer.readWhileIdle { environment.lastTransactionID }.map { $0.value &- $0.commits }
    }
}
