import Foundation
import Synchronization

/// The one thread that writes: it drains every queued request into one transaction (group commit),
/// commits, publishes the changes, then resumes each caller.
///
/// Two kinds of request share a drain. Requests over prepared values (saves, deletes) go first, in one
/// transaction: one that throws fails alone, because the transaction is aborted and replayed without it,
/// which is safe for them. Requests that run a caller's closure (`write { tx in }`, `update`) go next,
/// in one transaction of their own, each in a transaction nested in it: one that throws is aborted alone
/// and the others commit together, so no peer can make a closure run twice or lose its writes.
/// (A nested transaction per plain save would cost LMDB's per-`maxdbs` allocations on every save; failures
/// of plain requests are rare, so replaying them is the cheaper way to the same isolation.)
/// `MDB_MAP_FULL` aborts, grows the map while no transaction of this process is open, and replays; at the
/// size limit the batch replays once more with the map's reserve, which it may use only if it leaves the
/// store no larger (deletes, purges, evictions); otherwise each request is retried alone so that only the
/// ones that do not fit fail with `storageFull`.
final class CommitQueue: @unchecked Sendable {
    // @unchecked: the queue lives in `worker`, under its lock; the worker's thread owns the rest.

    /// Keeps the limits in every commit (nil: none are set up).
    let evictor: Evictor?

    private enum Work {
        /// Joins the next group commit.
        case batched((Context) throws -> Void, finish: (Error?) -> Void)
        /// Runs a caller's closure, which must run exactly once: joins the next group commit of such
        /// requests only, committed after the batched requests drained with it.
        case once((Context) throws -> Void, finish: (Error?) -> Void)
        /// Runs alone on the writer thread, with its own transactions (re-indexing, bulk purges).
        case exclusive((CommitQueue) throws -> Void, finish: (Error?) -> Void)
    }

    let environment: Environment
    let hub: any CommitListener
    /// The writer's thread and queue.
    private let worker = SerialWorker<Work>(name: "LocalStorageKit.writer")
    var lastTimestamp: Int64 = 0
    /// Whether a commit that freed many pages is followed by a small one before the next piece of work
    /// (``reclaimBeforeWork()``): not for the maintenance tool's commands that only read, which write nothing of
    /// their own.
    let reclaimsAfterLargeCommits: Bool
    /// LMDB's last transaction id when the writer ended its last piece of work (nil before the first, and once
    /// ``reclaimBeforeWork()`` looked at it). Only the writer's thread touches it.
    var lastCommitOfWork: Int?
    private let commits = Atomic<Int>(0)
    /// Odd while a write transaction is under way (a seqlock for ``readWhileIdle(_:)``).
    private let writeEpoch = Atomic<UInt64>(0)
    let logger: (any StorageLogger)?

    /// The number of requests waiting for the writer (tests use it to line requests up in one batch).
    var queuedCount: Int { worker.queuedCount }

    /// The number of transactions committed so far.
    var commitCount: Int { commits.load(ordering: .relaxed) }

    /// Runs `read` and returns its result with the number of commits so far, provided no write
    /// transaction of this writer was under way at any point meanwhile; nil otherwise (try later).
    ///
    /// Live queries use it to tell this process's commits from other processes' in LMDB's last
    /// transaction id: within the window, that id includes exactly `commits` of ours.
    func readWhileIdle<R>(_ read: () -> R) -> (commits: Int, value: R)? {
        let epoch = writeEpoch.load(ordering: .sequentiallyConsistent)
        guard epoch & 1 == 0 else { return nil }
        let count = commits.load(ordering: .sequentiallyConsistent)
        let value = read()
        guard writeEpoch.load(ordering: .sequentiallyConsistent) == epoch else { return nil }
        return (count, value)
    }

    /// One write transaction, counted: the epoch is odd from before it begins until it is counted.
    ///
    /// With `reserve` the transaction may use the map's reserve, provided it leaves the store no larger
    /// (``StoreTotals``): otherwise it is aborted with ``ReserveRefused``.
    func countedWrite<R>(reserve: Bool = false, _ body: (Transaction) throws -> R) throws -> R {
        writeEpoch.add(1, ordering: .sequentiallyConsistent)
        defer { writeEpoch.add(1, ordering: .sequentiallyConsistent) }
        let value = try environment.write(reserve: reserve) { txn in
            guard reserve else { return try body(txn) }
            let before = try StoreTotals.of(txn, logger: logger)
            let value = try body(txn)
            if before.grew(to: try StoreTotals.of(txn, logger: logger)) { throw ReserveRefused() }
            return value
        }
        commits.add(1, ordering: .sequentiallyConsistent)
        return value
    }

    static let maxBatchRequests = 4096

    /// Whether the map grows ahead of a batch of closure requests (``keepHeadroomForClosures()``); tests turn
    /// it off to reach the replay of a batch whose own pages meet the end of the map.
    let growsAheadOfClosures = Atomic<Bool>(true)

    /// The environment's page size once ``pageSize()`` read it (0 before).
    let knownPageSize = Atomic<Int>(0)

    /// The store's clock, which every batch's timestamp comes from.
    let clock: any StorageClock

    /// The store's change log, which every commit appends to in its own transaction.
    let changeLog: ChangeLog?

    init(
        environment: Environment, hub: any CommitListener, logger: (any StorageLogger)?,
        changeLog: ChangeLog? = nil, evictor: Evictor? = nil, clock: any StorageClock,
        reclaimsAfterLargeCommits: Bool = true
    ) {
        self.environment = environment
        self.clock = clock
        self.evictor = evictor
        self.changeLog = changeLog
        self.hub = hub
        self.logger = logger
        self.reclaimsAfterLargeCommits = reclaimsAfterLargeCommits
        worker.start(take: CommitQueue.nextBatch, run: { [self] work in process(work) })
    }

    /// Finishes the queued work, then ends the thread, then runs `last` (closing the environment), when the
    /// store closes. Work submitted after it fails with ``LocalStorageError/closed``.
    ///
    /// The last reference may be dropped on the writer thread itself (a change delivered to a subscriber that
    /// held it): the thread then goes on with the work queued so far and runs `last` once it has, so that no job
    /// runs on a closed environment.
    func stop(then last: (@Sendable () -> Void)? = nil) {
        worker.stop(then: last)
    }

    // MARK: - Submitting work

    /// Runs `body` in the next group commit and returns its result once that commit is durable.
    nonisolated(nonsending) func perform<R: Sendable>(_ body: @escaping (Context) throws -> R) async throws -> R {
        try await submit { box, finish in .batched({ context in box.value = try body(context) }, finish: finish) }
    }

    /// Runs `body`, which calls a caller's closure, in a transaction nested in the next group commit of
    /// such requests, and returns its result once that commit is durable.
    ///
    /// `body` runs once: a peer that throws is aborted alone. It runs again only when its writes, or the group
    /// commit's own pages, need the map to grow (nothing of the first run stays); never after it threw.
    nonisolated(nonsending) func performOnce<R: Sendable>(_ body: @escaping (Context) throws -> R) async throws -> R {
        try await submit { box, finish in .once({ context in box.value = try body(context) }, finish: finish) }
    }

    /// Queues `body` for the next group commit without waiting for it: for work a read found (a migrated
    /// record to store, an expired one to purge). `finish` runs on the writer thread with the outcome.
    func queueForNextCommit(_ body: @escaping (Context) throws -> Void, finish: @escaping (Error?) -> Void) {
        enqueue(.batched(body, finish: finish))
    }

    /// Runs `body` alone on the writer thread; it may commit several transactions with ``transact(_:)``.
    nonisolated(nonsending) func performExclusive<R: Sendable>(
        _ body: @escaping (CommitQueue) throws -> R
    ) async throws -> R {
        try await submit { box, finish in .exclusive({ writer in box.value = try body(writer) }, finish: finish) }
    }

    /// Queues the work `make` builds and suspends until the writer finishes it and lets go of it: the work
    /// stores its result in the box, `finish` its error, and the box resumes the caller when the writer has
    /// dropped the work's closures (``ResultBox``).
    nonisolated(nonsending) private func submit<R: Sendable>(
        _ make: (ResultBox<R>, @escaping (Error?) -> Void) -> Work
    ) async throws -> R {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, Error>) in
            let box = ResultBox<R>(continuation)
            enqueue(make(box) { error in box.error = error })
        }
    }

    private func enqueue(_ work: Work) {
        guard !worker.submit(work) else { return }
        switch work {
        case .batched(_, let finish), .once(_, let finish), .exclusive(_, let finish):
            finish(LocalStorageError.closed)
        }
    }

    // MARK: - The thread

    /// The work of the next drain: an exclusive request alone, else the requests before the next exclusive
    /// one, at most ``maxBatchRequests``.
    private static func nextBatch(_ queue: inout [Work]) -> [Work] {
        if case .exclusive = queue[0] { return [queue.removeFirst()] }
        let end =
            queue.prefix(CommitQueue.maxBatchRequests).firstIndex {
                if case .exclusive = $0 { true } else { false }
            } ?? min(queue.count, CommitQueue.maxBatchRequests)
        let work = Array(queue[..<end])
        queue.removeFirst(end)
        return work
    }

    private func process(_ work: [Work]) {
        reclaimBeforeWork()
        defer { lastCommitOfWork = environment.lastTransactionID }
        if work.count == 1, case .exclusive(let body, let finish) = work[0] {
            do {
                try body(self)
                finish(nil)
            } catch {
                finish(CommitQueue.outgoing(error))
            }
            return
        }
        // Requests over prepared values first, in one transaction; then the ones that run a caller's
        // closure, in another, so that no failure among the first can replay the second.
        var plain: [((Context) throws -> Void, (Error?) -> Void)] = []
        var once: [((Context) throws -> Void, (Error?) -> Void)] = []
        for item in work {
            switch item {
            case .batched(let body, let finish): plain.append((body, finish))
            case .once(let body, let finish): once.append((body, finish))
            case .exclusive: break
            }
        }
        if !plain.isEmpty { commit(plain) }
        if !once.isEmpty { commitOnce(once) }
    }

    /// The next batch's moment: its timestamp, strictly after the last one's, and the host's boot time.
    func nextTimestamp() -> LeaseMoment {
        let now = max(clock.wallNanoseconds(), lastTimestamp.adding(saturating: 1))
        lastTimestamp = now
        return LeaseMoment(wall: now, boot: clock.bootNanoseconds())
    }

}

extension CommitQueue {
    /// The error a caller gets: a caller's own error (``CallerError``) unchanged, anything else as a
    /// ``LocalStorageError``.
    static func outgoing(_ error: any Error) -> any Error {
        if error is CallerError { return error }
        return LocalStorageError.wrapping(error)
    }
}

/// An error thrown by a caller's own closure (`update`'s `mutate`): it travels through the writer and
/// the public boundary unwrapped, and comes out as the caller threw it.
struct CallerError: Error {
    let underlying: any Error
}

/// A request of a batch threw; the batch replays without it.
struct RequestFailure: Error {
    let position: Int
    let error: any Error
}

/// A request's outcome, handed to its caller when the writer lets go of the request: the box's `deinit`
/// resumes the caller once no closure of the request holds it any more. What the request's closures captured
/// (a caller's closure holding its store, a store's core) is then released before the caller goes on, so a
/// store whose last reference the caller drops right after the call closes at once, not when the writer
/// gets round to dropping its closures (an open right after found it still open).
private final class ResultBox<R: Sendable>: @unchecked Sendable {
    // @unchecked: written on the writer thread, by the request and its `finish`; read in `deinit`, after the
    // last reference went.
    var value: R?
    var error: (any Error)?
    private let continuation: CheckedContinuation<R, Error>

    init(_ continuation: CheckedContinuation<R, Error>) {
        self.continuation = continuation
    }

    deinit {
        if let error {
            continuation.resume(throwing: error)
        } else if let value {
            continuation.resume(returning: value)
        } else {
            continuation.resume(throwing: LocalStorageError.storageError(code: -1, message: "no result"))
        }
    }
}
