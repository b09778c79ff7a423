import Synchronization

/// Wakes a caller waiting for one record to change (a load by another process, `updates(of:id:)`): it
/// listens for the changes of the id's type, this process's commits directly and other processes'
/// through the change log (the signal change streams use), and the caller wakes at the first one that
/// may concern the id, or when its wait times out. It never reads the record itself; the caller looks
/// again when woken.
final class RecordWatch: Sendable {
    private struct State {
        var isPending = false
        var continuation: CheckedContinuation<Void, Never>?
    }

    private let core: StoreCore
    private let typeName: String
    private let state = Mutex(State())
    private let subscription = Mutex<UInt64?>(nil)

    /// Starts listening for changes to the record with `id` of the type called `typeName`.
    init(core: StoreCore, typeName: String, id: String) {
        self.core = core
        self.typeName = typeName
        core.liveQueries.beginObserving()
        let key = Array(id.utf8)
        let token = core.hub.subscribe(typeName) { [weak self] changes in
            guard let self else { return }
            if changes.isEmpty || changes.contains(where: { RecordWatch.mayConcern($0, id: id, key: key) }) {
                self.wake()
            }
        }
        subscription.withLock { $0 = token }
    }

    /// Stops listening. Call it once the caller no longer waits.
    func end() {
        guard let token = subscription.withLock({ $0.take() }) else { return }
        core.hub.unsubscribe(typeName, token: token)
        core.liveQueries.endObserving()
        wake()
    }

    /// Suspends until a change that may concern the id arrives (or arrived since the last wait), or
    /// `duration` of the store's clock passes, or the task is cancelled.
    func wait(for duration: Duration) async {
        await wait(untilWallNanoseconds: core.clock.wallNanoseconds().advanced(saturatingBy: duration))
    }

    /// Suspends until a change that may concern the id arrives (or arrived since the last wait), or the
    /// store's clock reaches `wallDeadline` (nanoseconds since 1970), or the task is cancelled.
    func wait(untilWallNanoseconds wallDeadline: Int64) async {
        let clock = core.clock
        let timer = Task { [weak self] in
            do {
                try await clock.sleep(untilWallNanoseconds: wallDeadline)
            } catch {
                return  // Woken by a change first.
            }
            self?.wake()
        }
        defer { timer.cancel() }
        await waitForChange()
    }

    /// Suspends until a change that may concern the id arrives (or arrived since the last wait), or the task is
    /// cancelled; no timer (a test's virtual clock sees no sleeper).
    func waitForChange() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.isPending || Task.isCancelled {
                        state.isPending = false
                        return true
                    }
                    state.continuation = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            wake()
        }
    }

    private func wake() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let continuation = state.continuation.take() else {
                state.isPending = true
                return nil
            }
            return continuation
        }
        continuation?.resume()
    }

    /// Whether a change may concern the record with `id` (whose key is `key`): one that names another id, or
    /// another record's key, does not (a load's watch read its lease at every commit to the type: review-86 #14).
    private static func mayConcern(_ change: PublishedChange, id: String, key: [UInt8]) -> Bool {
        switch change.kind {
        case .deleted(let other), .expired(let other), .externalInserted(let other), .externalUpdated(let other):
            other == id
        case .inserted, .updated, .touched:
            change.recordKey.map { $0 == key } ?? true
        case .cleared:
            true
        }
    }

    /// Whether a change that may concern the id arrived that no wait has taken yet (for tests).
    var hasPendingChange: Bool { state.withLock { $0.isPending } }
}
