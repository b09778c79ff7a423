import Synchronization

/// The loads through the cache under way in this process: one flight per (type, id), which every caller
/// asking for that id joins (Go's `singleflight`). The flight's work runs once, in a task of its own;
/// every caller waiting on it gets its outcome (the loaded value, or the loader's error), or
/// ``LocalStorageError/loadTimedOut(id:)`` when the work outlasts that caller's own timeout.
/// The work is given up (cancelled, and the id free for a new flight) at the deadline of the caller that
/// started it, which is also its lease's in the store; a caller that joins with an earlier deadline stops
/// waiting at its own, and the work goes on for the others; one that joins with a later deadline starts a
/// flight of its own when the work is given up, and waits for that one until its own deadline. A caller inside a flight's own work (a loader that
/// loads its own id through the cache, directly or through other loads) would wait on itself: it gets
/// `loadTimedOut` at once.
final class LoadFlights: Sendable {
    /// The flights whose work the current task runs in, outermost first (a flight's task inherits its
    /// starter's), each with the flights object (the store) it flies in: a loader of one store that loads
    /// through another store (a memory store over a disk store) may ask for the same type number and id.
    @TaskLocal static var enclosing: [Enclosing] = []

    struct Enclosing: Hashable, Sendable {
        let flights: ObjectIdentifier
        let key: Key
    }

    struct Key: Hashable, Sendable {
        let type: UInt32
        let id: [UInt8]
    }

    typealias Outcome = Result<(any Sendable)?, any Error>
    /// A flight's work, given the flight's deadline (on the clock's uptime), when it is given up, and the tokens of
    /// the other processes' loads its callers saw under way before they joined it (``AwaitedLoads``).
    typealias Work = @Sendable (_ givenUpAt: Duration, _ awaited: AwaitedLoads) async throws -> (any Sendable)?

    /// The tokens of the loads (leases) of other processes that a flight's callers saw held at their first look,
    /// before they joined it: a nil one of those loads remembers answers every caller of the flight, which then loads
    /// nothing, whichever caller saw it (review-107 A3: only the starter's counted, and a joiner that had seen a lease
    /// the starter had not got a second load's value).
    final class AwaitedLoads: Sendable {
        private let tokens: Mutex<Set<UInt64>>

        init(_ token: UInt64?) { tokens = Mutex(token.map { [$0] } ?? []) }

        func insert(_ token: UInt64) { _ = tokens.withLock { $0.insert(token) } }

        func contains(_ token: UInt64) -> Bool { tokens.withLock { $0.contains(token) } }
    }

    /// What a waiter whose own deadline is later than its flight's gets when the flight is given up: it
    /// starts a flight of its own.
    private struct GivenUpBeforeThisCaller: Error {}

    private struct Flight {
        let number: UInt64
        /// When the work is given up: the deadline of the caller that started it (its lease's).
        let deadline: Duration
        let awaited: AwaitedLoads
        var waiters: [UInt64: CheckedContinuation<(any Sendable)?, any Error>] = [:]
        /// Each waiter's own deadline.
        var waiterDeadlines: [UInt64: Duration] = [:]
        /// Timers of callers whose deadline is earlier than the flight's, by waiter.
        var waiterTimers: [UInt64: Task<Void, Never>] = [:]
        var task: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }

    private struct State {
        var flights: [Key: Flight] = [:]
        var nextNumber: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The steps of a load through the cache where a test can hold it (another process's load can start or end there).
    enum Step: Sendable {
        /// After the caller's first look, before it joins a flight.
        case afterFirstLook
        /// In the flight, before each of its looks.
        case beforeLook
        /// In the flight, after a look found no record and no lease held, before it takes the lease.
        case beforeTakingLease
        /// In the flight, after another lease (or a live record) refused it one.
        case afterRefusal
    }

    /// Runs at each ``Step`` of every load through this store while set (tests).
    let stepsForTests = Mutex<(@Sendable (Step) async -> Void)?>(nil)

    /// Runs the hook ``stepsForTests`` holds, if any, at `step`.
    func pauseForTests(at step: Step) async {
        guard let pause = stepsForTests.withLock({ $0 }) else { return }
        await pause(step)
    }

    /// How much earlier than the flight's a caller's deadline must be to get a timer of its own: callers with
    /// the flight's policy who arrive a moment later share the flight's timer.
    static let deadlineSlack = Duration.milliseconds(10)

    /// The number of flights under way (tests check that finished ones are gone).
    var count: Int { state.withLock { $0.flights.count } }

    /// The number of callers waiting on flights (tests wait for their callers to line up).
    var waiterCount: Int { state.withLock { $0.flights.values.reduce(0) { $0 + $1.waiters.count } } }

    /// Whether a flight for `key` is under way.
    func isFlying(_ key: Key) -> Bool { state.withLock { $0.flights[key] != nil } }

    /// Joins the flight of `key`, starting one that runs `work` when none is under way, and returns its
    /// outcome.
    ///
    /// - Parameters:
    ///   - deadline: the caller's own, on `clock`'s uptime: its call's start plus its `loadTimeout`, the same however
    ///     many flights it joins in turn.
    ///   - timeout: the caller's `loadTimeout`: a flight it starts with less than that left (a caller whose first
    ///     flight a write overtook) is given up that long after its start, not at the caller's deadline, and the
    ///     caller stops waiting at its own (review-92 F3: the load was cancelled with the caller, and the callers
    ///     that had joined it loaded again).
    ///   - awaiting: the token of another process's load of the id the caller saw under way before it joined
    ///     (``AwaitedLoads``).
    /// - Throws: what `work` throws; `loadTimedOut(id:)` when `deadline` passes first (the caller's own,
    ///   whoever started the flight: a flight given up at an earlier deadline is followed by one this caller
    ///   starts), and at once when the caller runs inside the work of `key`'s flight (it would wait on itself);
    ///   `CancellationError` when the calling task is cancelled (the flight goes on for the others).
    func join(
        _ key: Key, id: String, until deadline: Duration, timeout: Duration, awaiting: UInt64?,
        clock: any StorageClock, work: @escaping Work
    ) async throws -> (any Sendable)? {
        if Self.enclosing.contains(Enclosing(flights: ObjectIdentifier(self), key: key)) {
            throw LocalStorageError.loadTimedOut(id: id)
        }
        while true {
            guard clock.uptime() < deadline else { throw LocalStorageError.loadTimedOut(id: id) }
            do {
                return try await wait(
                    key, id: id, deadline: deadline, timeout: timeout, awaiting: awaiting, clock: clock, work: work)
            } catch is GivenUpBeforeThisCaller {
                continue
            }
        }
    }

    /// Joins or starts the flight of `key` once, as a caller whose deadline is `deadline` (and whose `loadTimeout` is
    /// `timeout`) and who saw the load `awaiting` under way.
    private func wait(
        _ key: Key, id: String, deadline: Duration, timeout: Duration, awaiting: UInt64?, clock: any StorageClock,
        work: @escaping Work
    ) async throws -> (any Sendable)? {
        let waiter = state.withLock { state -> UInt64 in
            state.nextNumber += 1
            return state.nextNumber
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelled = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    if let flight = state.flights[key] {
                        if let awaiting { flight.awaited.insert(awaiting) }
                        if deadline < flight.deadline - Self.deadlineSlack {
                            state.flights[key]?.waiterTimers[waiter] = waiterTimer(
                                waiter, of: key, number: flight.number, id: id, deadline: deadline, clock: clock)
                        }
                    } else {
                        state.nextNumber += 1
                        let flightDeadline = max(deadline, clock.uptime() + timeout)
                        state.flights[key] = Flight(
                            number: state.nextNumber, deadline: flightDeadline, awaited: AwaitedLoads(awaiting))
                        start(
                            key, id: id, number: state.nextNumber, deadline: flightDeadline, clock: clock, work: work,
                            &state)
                        if deadline < flightDeadline - Self.deadlineSlack {
                            state.flights[key]?.waiterTimers[waiter] = waiterTimer(
                                waiter, of: key, number: state.nextNumber, id: id, deadline: deadline, clock: clock)
                        }
                    }
                    state.flights[key]?.waiters[waiter] = continuation
                    state.flights[key]?.waiterDeadlines[waiter] = deadline
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let continuation = state.withLock { state in
                state.flights[key]?.waiterTimers.removeValue(forKey: waiter)?.cancel()
                state.flights[key]?.waiterDeadlines[waiter] = nil
                return state.flights[key]?.waiters.removeValue(forKey: waiter)
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// A timer that ends one caller's wait at its own deadline, earlier than the flight's.
    private func waiterTimer(
        _ waiter: UInt64, of key: Key, number: UInt64, id: String, deadline: Duration, clock: any StorageClock
    ) -> Task<Void, Never> {
        Task {
            do {
                try await clock.sleep(until: deadline)
            } catch {
                return  // The flight finished, or this caller left, first.
            }
            self.timeOut(waiter, of: key, number: number, id: id)
        }
    }

    /// Ends the wait of one caller whose own deadline passed before the flight's (the work goes on).
    private func timeOut(_ waiter: UInt64, of key: Key, number: UInt64, id: String) {
        let continuation = state.withLock { state -> CheckedContinuation<(any Sendable)?, any Error>? in
            guard state.flights[key]?.number == number else { return nil }
            state.flights[key]?.waiterTimers[waiter] = nil
            state.flights[key]?.waiterDeadlines[waiter] = nil
            return state.flights[key]?.waiters.removeValue(forKey: waiter)
        }
        continuation?.resume(throwing: LocalStorageError.loadTimedOut(id: id))
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
            let deadline = clock.uptime() + timeout
            state.flights[key] = Flight(number: state.nextNumber, deadline: deadline, awaited: AwaitedLoads(nil))
            start(key, id: id, number: state.nextNumber, deadline: deadline, clock: clock, work: work, &state)
            return true
        }
    }

    /// Starts the work and its timer; called with the lock held, after the flight was registered.
    private func start(
        _ key: Key, id: String, number: UInt64, deadline: Duration, clock: any StorageClock, work: @escaping Work,
        _ state: inout State
    ) {
        let enclosing = Self.enclosing + [Enclosing(flights: ObjectIdentifier(self), key: key)]
        let held = HeldWork(work)
        let awaited = state.flights[key]?.awaited ?? AwaitedLoads(nil)
        state.flights[key]?.task = Task {
            let outcome = await Self.$enclosing.withValue(enclosing) {
                await held.run(givenUpAt: deadline, awaited: awaited)
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
        for timer in flight.waiterTimers.values { timer.cancel() }
        for (waiter, continuation) in flight.waiters {
            if giveUp, let own = flight.waiterDeadlines[waiter], own > flight.deadline + Self.deadlineSlack {
                continuation.resume(throwing: GivenUpBeforeThisCaller())
            } else {
                continuation.resume(with: outcome)
            }
        }
    }
}

/// A flight's work, let go of as soon as it has run: what it captured (the store a load writes to) is released
/// before its waiters resume, so a store whose last reference a waiter drops right after its load closes at once.
private final class HeldWork: Sendable {
    private let work: Mutex<LoadFlights.Work?>

    init(_ work: @escaping LoadFlights.Work) {
        self.work = Mutex(work)
    }

    /// Runs the work once and drops it; what it returned or threw.
    func run(givenUpAt: Duration, awaited: LoadFlights.AwaitedLoads) async -> LoadFlights.Outcome {
        guard let work = self.work.withLock({ $0.take() }) else {
            return .failure(LocalStorageError.storageError(code: -1, message: "a load ran twice"))
        }
        do {
            return .success(try await work(givenUpAt, awaited))
        } catch {
            return .failure(error)
        }
    }
}
