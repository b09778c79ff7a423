import Synchronization

/// The loads through the cache under way in this process: one flight per (type, id), which every caller
/// asking for that id joins (Go's `singleflight`). The flight's work runs once, in a task of its own;
/// every caller waiting on it gets its outcome (the loaded value, or the loader's error), or
/// ``LocalStorageError/loadTimedOut(id:)`` when the work takes longer than the timeout (the work is then
/// cancelled and the id is free for a new flight).
final class LoadFlights: Sendable {
    struct Key: Hashable, Sendable {
        let type: UInt32
        let id: [UInt8]
    }

    typealias Outcome = Result<(any Sendable)?, any Error>
    typealias Work = @Sendable () async throws -> (any Sendable)?

    private struct Flight {
        let number: UInt64
        var waiters: [UInt64: CheckedContinuation<(any Sendable)?, any Error>] = [:]
        var task: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }

    private struct State {
        var flights: [Key: Flight] = [:]
        var nextNumber: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The number of flights under way (tests check that finished ones are gone).
    var count: Int { state.withLock { $0.flights.count } }

    /// The number of callers waiting on flights (tests wait for their callers to line up).
    var waiterCount: Int { state.withLock { $0.flights.values.reduce(0) { $0 + $1.waiters.count } } }

    /// Whether a flight for `key` is under way.
    func isFlying(_ key: Key) -> Bool { state.withLock { $0.flights[key] != nil } }

    /// Joins the flight of `key`, starting one that runs `work` when none is under way, and returns its
    /// outcome.
    ///
    /// - Throws: what `work` throws; `loadTimedOut(id:)` when it takes longer than `timeout` of `clock`'s
    ///   time; `CancellationError` when the calling task is cancelled (the flight goes on for the others).
    func join(
        _ key: Key, id: String, timeout: Duration, clock: any StorageClock, work: @escaping Work
    ) async throws -> (any Sendable)? {
        let waiter = state.withLock { state -> UInt64 in
            state.nextNumber += 1
            return state.nextNumber
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelled = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    if state.flights[key] == nil {
                        state.nextNumber += 1
                        state.flights[key] = Flight(number: state.nextNumber)
                        start(key, id: id, number: state.nextNumber, timeout: timeout, clock: clock, work: work, &state)
                    }
                    state.flights[key]?.waiters[waiter] = continuation
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let continuation = state.withLock { $0.flights[key]?.waiters.removeValue(forKey: waiter) }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Starts a flight for `key` running `work` unless one is under way (a background refresh nobody
    /// waits on); returns whether it started one. `done` runs with the outcome when it finishes.
    @discardableResult
    func startIfIdle(
        _ key: Key, id: String, timeout: Duration, clock: any StorageClock, work: @escaping Work
    ) -> Bool {
        state.withLock { state in
            guard state.flights[key] == nil else { return false }
            state.nextNumber += 1
            state.flights[key] = Flight(number: state.nextNumber)
            start(key, id: id, number: state.nextNumber, timeout: timeout, clock: clock, work: work, &state)
            return true
        }
    }

    /// Starts the work and its timer; called with the lock held, after the flight was registered.
    private func start(
        _ key: Key, id: String, number: UInt64, timeout: Duration, clock: any StorageClock, work: @escaping Work,
        _ state: inout State
    ) {
        let deadline = clock.uptime() + timeout
        state.flights[key]?.task = Task {
            let outcome: Outcome
            do {
                outcome = .success(try await work())
            } catch {
                outcome = .failure(error)
            }
            self.finish(key, number: number, with: outcome)
        }
        state.flights[key]?.timer = Task {
            do {
                try await clock.sleep(until: deadline)
            } catch {
                return  // The flight finished first and cancelled its timer.
            }
            self.finish(key, number: number, with: .failure(LocalStorageError.loadTimedOut(id: id)), giveUp: true)
        }
    }

    /// Ends flight `number` of `key` (if it is still the current one) and hands `outcome` to its waiters.
    private func finish(_ key: Key, number: UInt64, with outcome: Outcome, giveUp: Bool = false) {
        let flight = state.withLock { state -> Flight? in
            guard let flight = state.flights[key], flight.number == number else { return nil }
            state.flights[key] = nil
            return flight
        }
        guard let flight else { return }
        if giveUp {
            flight.task?.cancel()
        } else {
            flight.timer?.cancel()
        }
        for continuation in flight.waiters.values { continuation.resume(with: outcome) }
    }
}
