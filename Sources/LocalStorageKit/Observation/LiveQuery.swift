import Foundation
import Synchronization

/// The state of one live query: which commits it has seen, the coalescing window, and the last
/// result it emitted.
///
/// The writer thread calls ``invalidate()`` after each commit that touched the type (or when another
/// process wrote); that only bumps a counter and wakes the query's task, so it never blocks. The quiet
/// period counts writes, not emissions: the task reruns at once for a write when no rerun for a write
/// happened within the last coalescing window (the leading edge; the first write after the initial
/// result always does), else waits out the rest of that window, so a burst costs at most one rerun per
/// window. A record's expiry reruns it at once. It reruns once if anything changed since its last run,
/// and emits the result unless it is the same as the last one emitted. Every wait is on the store's
/// clock.
final class LiveQuery<T: LocalStorable>: Sendable {
    /// Commits seen so far; the task compares it before and after each run.
    private let generation = Atomic<UInt64>(0)
    /// Expiry-timer wake-ups so far: they rerun the query without counting as writes.
    private let expiries = Atomic<UInt64>(0)
    /// Wakes the task; keeps at most one pending wake-up, so a burst costs one.
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let coalescing: Duration
    /// The store's clock: windows and expiry timers wait on it.
    private let clock: any StorageClock
    /// The query's conditions, once known: changes outside them do not rerun it.
    private let plan = Mutex<QueryPlan?>(nil)
    /// Wakes the query when the soonest expiry among the type's records passes, and whether ``stop()`` was called
    /// (a run that ends after it sets no new timer).
    private let expiryTimer = Mutex<(task: Task<Void, Never>?, stopped: Bool)>((nil, false))

    /// Called each time a commit marks the result stale (tests count them: a change outside the query's
    /// conditions must not).
    private let onInvalidate: @Sendable () -> Void

    /// Sleep out the whole window before each rerun and compare results by JSON (the benchmark's baseline).
    private let firstDesign: Bool

    init(
        coalescing: Duration, clock: any StorageClock, firstDesign: Bool = false,
        onInvalidate: @escaping @Sendable () -> Void = {}
    ) {
        self.coalescing = max(coalescing, .zero)
        self.onInvalidate = onInvalidate
        self.clock = clock
        self.firstDesign = firstDesign
        (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Sets the conditions changes are checked against (see ``QueryPlan/mayBeAffected(by:)``).
    func setPlan(_ plan: QueryPlan) { self.plan.withLock { $0 = plan } }

    /// Marks the result stale when one of `changes` may alter it (an empty list: something changed that
    /// is not described, so it may).
    func invalidate(for changes: [PublishedChange]) {
        let plan = self.plan.withLock { $0 }
        if let plan, !changes.isEmpty, !changes.contains(where: plan.mayBeAffected) { return }
        onInvalidate()
        invalidate()
    }

    /// Wakes the query just after `moment` (ns since 1970), replacing an earlier wake-up.
    private func invalidate(at moment: Int64) {
        let clock = self.clock
        // The deadline is fixed now, not when the task starts: time that passes meanwhile counts.
        let deadline = clock.uptime() + .nanoseconds(max(0, moment &- clock.wallNanoseconds()) &+ 1_000_000)
        let timer = Task { [weak self] in
            do {
                try await clock.sleep(until: deadline)
            } catch {
                return  // replaced or stopped
            }
            self?.expire()
        }
        expiryTimer.withLock { current in
            current.task?.cancel()
            current.task = current.stopped ? nil : timer
            if current.stopped { timer.cancel() }
        }
    }

    /// Marks the current result stale (called on the writer thread; never blocks).
    func invalidate() {
        generation.add(1, ordering: .releasing)
        wake.yield()
    }

    /// Marks the current result stale because a record may have expired: reruns without waiting for a window.
    private func expire() {
        expiries.add(1, ordering: .releasing)
        wake.yield()
    }

    /// Whether an expiry wake-up is pending.
    var hasExpiryTimer: Bool { expiryTimer.withLock { $0.task != nil } }

    /// Ends ``run(emittingTo:query:)`` at its next wait.
    func stop() {
        wake.finish()
        expiryTimer.withLock { current in
            current.task?.cancel()
            current = (nil, true)
        }
    }

    /// Emits the current result, then a fresh one after each coalesced burst of invalidations, until
    /// the task is cancelled or ``stop()`` is called. A query error ends `output` with that error, but for a rerun
    /// that finds the shared tier unavailable when there is `recovering`: the query keeps its last result and awaits
    /// `recovering` with the error (true once the instance may serve again, false for a failure waiting does not
    /// cure or when the store closes), then reruns.
    ///
    /// After each run, `nextExpiry` tells when the soonest record of the type expires after the moment the
    /// run started (read before the query, so a row that expires while the query runs still gets its rerun):
    /// the query reruns then, so an expiring row leaves the result without any write. `onRerun` counts reruns.
    func run(
        emittingTo output: AsyncThrowingStream<[T], Error>.Continuation,
        query: () async throws -> [T], nextExpiry: (_ after: Int64) -> Int64? = { _ in nil },
        recovering: ((LocalStorageError) async -> Bool)? = nil, onRerun: () -> Void = {}
    ) async {
        var seen = (writes: generation.load(ordering: .acquiring), expiries: expiries.load(ordering: .acquiring))
        var lastEmitted: Fingerprint?
        /// One run, with the id and update time of each row it decoded.
        func run() async throws -> (result: [T], fingerprint: Fingerprint?) {
            let versions = RowVersions()
            let started = clock.wallNanoseconds()
            let result = try await RowVersions.$current.withValue(versions) { try await query() }
            if let moment = nextExpiry(started) { invalidate(at: moment) }
            return (result, LiveQuery.fingerprint(of: result, versions: firstDesign ? [] : versions.rows))
        }
        do {
            let first = try await run()
            lastEmitted = first.fingerprint
            output.yield(first.result)
            /// When the last rerun for a write started; nil until one did (the initial result does not count).
            var lastWriteRun: Duration?
            /// When a write was last seen (a wake-up for one, or writes that came while a rerun waited).
            var lastWriteSeen: Duration?
            for await _ in wakeUps {
                // Leading edge: the first write after a quiet window (no write seen for a window) reruns at
                // once; while writes keep coming, at most one rerun per window.
                let wokenAt = clock.uptime()
                let writes = generation.load(ordering: .acquiring)
                let wroteNow = writes != seen.writes
                if firstDesign {
                    try await clock.sleep(for: coalescing)
                } else if wroteNow, let lastWriteSeen, wokenAt - lastWriteSeen < coalescing, let lastWriteRun,
                    wokenAt < lastWriteRun + coalescing
                {
                    try await clock.sleep(until: lastWriteRun + coalescing)
                }
                if wroteNow { lastWriteSeen = wokenAt }
                // Read the counters before the query starts: a commit after this point bumps them again
                // and brings another (possibly silent) rerun, so none is ever missed.
                let current = (
                    writes: generation.load(ordering: .acquiring), expiries: expiries.load(ordering: .acquiring)
                )
                guard current != seen else { continue }
                // Writes that came while it waited keep the window going (they are this rerun's, not seen apart).
                if current.writes != writes { lastWriteSeen = clock.uptime() }
                if current.writes != seen.writes { lastWriteRun = clock.uptime() }
                seen = current
                let result: [T]
                let fingerprint: Fingerprint?
                do {
                    (result, fingerprint) = try await run()
                } catch let error as LocalStorageError {
                    // An outage or a stall of the server: the result emitted last stands until the instance has
                    // reconnected and caught up, then the query reruns (trial91 #1: the stream ended for good).
                    guard case .sharedTierUnavailable = error, let recovering else { throw error }
                    let recovered = await recovering(error)
                    try Task.checkCancellation()  // A consumer that left ends the stream as it always does.
                    guard recovered else { throw error }
                    invalidate()
                    continue
                }
                onRerun()
                if fingerprint == nil || fingerprint != lastEmitted {
                    lastEmitted = fingerprint
                    output.yield(result)
                }
            }
            output.finish()
        } catch is CancellationError {
            output.finish()
        } catch {
            output.finish(throwing: error)
        }
    }

    /// What two results are compared by.
    enum Fingerprint: Equatable {
        /// The id and update time of every row, in order: what the store's reads noted.
        case versions([RowVersion])
        /// The result's JSON with sorted keys, for a query whose rows the store did not note one by one.
        case json(Data)
    }

    /// The ids and record versions when every row of the result was noted (no encoding at all); else
    /// the JSON with sorted keys (ids, order and every field). Nil when a value does not encode, which
    /// counts as a change.
    static func fingerprint(of result: [T], versions: [RowVersion]) -> Fingerprint? {
        if versions.count == result.count { return .versions(versions) }
        return fingerprint(of: result).map(Fingerprint.json)
    }

    /// The result's JSON with sorted keys; nil when a value does not encode (then every rerun counts as a
    /// change, so the query still delivers: the failure costs deliveries, never a missed one).
    static func fingerprint(of result: [T]) -> Data? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do {
            return try encoder.encode(result)
        } catch {
            return nil
        }
    }
}
