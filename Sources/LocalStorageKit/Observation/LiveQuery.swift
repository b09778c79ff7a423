import Foundation
import Synchronization

/// The state of one live query: which commits it has seen, the coalescing window, and the last
/// result it emitted.
///
/// The writer thread calls ``invalidate()`` after each commit that touched the type (or when another
/// process wrote); that only bumps a counter and wakes the query's task, so it never blocks. The task
/// reruns at once when its last run is a coalescing window old (the leading edge), else waits out the
/// rest of the window; it reruns once if anything was committed since its last run, and emits the result
/// unless it encodes to the same bytes as the last one emitted.
final class LiveQuery<T: LocalStorable>: Sendable {
    /// Commits seen so far; the task compares it before and after each run.
    private let generation = Atomic<UInt64>(0)
    /// Wakes the task; keeps at most one pending wake-up, so a burst costs one.
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let coalescing: Duration
    /// The query's conditions, once known: changes outside them do not rerun it.
    private let plan = Mutex<QueryPlan?>(nil)
    /// Wakes the query when the soonest expiry among the type's records passes.
    private let expiryTimer = Mutex<Task<Void, Never>?>(nil)

    /// Sleep out the whole window before each rerun and compare results by JSON (the benchmark's baseline).
    private let firstDesign: Bool

    init(coalescing: Duration, firstDesign: Bool = false) {
        self.coalescing = max(coalescing, .zero)
        self.firstDesign = firstDesign
        (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Sets the conditions changes are checked against (see ``QueryPlan/mayBeAffected(by:)``).
    func setPlan(_ plan: QueryPlan) { self.plan.withLock { $0 = plan } }

    /// Marks the result stale when one of `changes` may alter it (an empty list: something changed that
    /// is not described, so it may).
    func invalidate(for changes: [PublishedChange]) {
        let plan = self.plan.withLock { $0 }
        guard let plan, !changes.isEmpty else { return invalidate() }
        if changes.contains(where: plan.mayBeAffected) { invalidate() }
    }

    /// Wakes the query just after `moment` (ns since 1970), replacing an earlier wake-up.
    private func invalidate(at moment: Int64) {
        let delay = max(0, moment - Clock.now()) + 1_000_000
        let timer = Task { [weak self] in
            do {
                try await Task.sleep(for: .nanoseconds(delay))
            } catch {
                return  // replaced or stopped
            }
            self?.invalidate()
        }
        expiryTimer.withLock { current in
            current?.cancel()
            current = timer
        }
    }

    /// Marks the current result stale (called on the writer thread; never blocks).
    func invalidate() {
        generation.add(1, ordering: .releasing)
        wake.yield()
    }

    /// Ends ``run(emittingTo:query:)`` at its next wait.
    func stop() {
        wake.finish()
        expiryTimer.withLock { $0?.cancel() }
    }

    /// Emits the current result, then a fresh one after each coalesced burst of invalidations, until
    /// the task is cancelled or ``stop()`` is called. A query error ends `output` with that error.
    ///
    /// After each run, `nextExpiry` tells when the soonest record of the type expires: the query reruns
    /// then, so an expiring row leaves the result without any write. `onRerun` counts reruns.
    func run(
        emittingTo output: AsyncThrowingStream<[T], Error>.Continuation,
        query: () async throws -> [T], nextExpiry: () -> Int64? = { nil },
        onRerun: () -> Void = {}
    ) async {
        var seen = generation.load(ordering: .acquiring)
        var lastEmitted: Fingerprint?
        /// One run, with the id and update time of each row it decoded.
        func run() async throws -> (result: [T], fingerprint: Fingerprint?) {
            let versions = RowVersions()
            let result = try await RowVersions.$current.withValue(versions) { try await query() }
            if let moment = nextExpiry() { invalidate(at: moment) }
            return (result, LiveQuery.fingerprint(of: result, versions: firstDesign ? [] : versions.rows))
        }
        do {
            let first = try await run()
            lastEmitted = first.fingerprint
            output.yield(first.result)
            var lastRun = ContinuousClock.now
            for await _ in wakeUps {
                // Leading edge: the first commit after a quiet window reruns at once; while commits keep
                // coming, at most one rerun per window.
                let quiet = ContinuousClock.now - lastRun
                if firstDesign {
                    try await Task.sleep(for: coalescing)
                } else if quiet < coalescing {
                    try await Task.sleep(for: coalescing - quiet)
                }
                // Read the counter before the query starts: a commit after this point bumps it again
                // and brings another (possibly silent) rerun, so none is ever missed.
                let current = generation.load(ordering: .acquiring)
                guard current != seen else { continue }
                seen = current
                lastRun = ContinuousClock.now
                let (result, fingerprint) = try await run()
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

    /// The result's JSON with sorted keys; nil when a value does not encode.
    static func fingerprint(of result: [T]) -> Data? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try? encoder.encode(result)
    }
}
