import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Follows writes by other processes while live queries or change streams are active.
///
/// Every commit, by any process, appends its changes to the store's change log (``ChangeLog``) in its own
/// transaction. While at least one observer is active, a task checks LMDB's last transaction id every
/// `pollInterval`, and a watch of the data file (``DataFileWatch``) checks it as soon as the file is written;
/// when it moved, it reads the log entries after its position that another process
/// wrote, in commit order, and publishes them through the ``ObserverHub`` like this process's own
/// commits: change streams get the changes (reading the values from the store), live queries of those
/// types rerun. Own commits reach observers from the writer, through ``publish(_:logged:)``, and are skipped
/// here by their mark.
///
/// Observers get every commit in commit order, whichever process made it: the writer and the poller append to
/// one queue under the state lock (the writer first the other processes' commits the log holds before its
/// own), a poll stops at an own commit the writer has not queued yet, and one thread at a time delivers the
/// queue, with no lock held while subscribers run.
final class LiveQueryCenter: CommitListener {
    /// What the follower knows, under ``state``'s lock (the diagnostics read it: LiveQueryCenter+Diagnostics.swift).
    struct State {
        var observers = 0
        var poller: Task<Void, Never>?
        /// Wakes a poll as soon as the data file is written (another process's commit), between timed polls. It
        /// outlives the last observer by ``watchLinger`` (``watchIdleSince``), for the next one.
        var watch: DataFileWatch?
        /// When the last observer ended, while the watch waits for the next one.
        var watchIdleSince: ContinuousClock.Instant?
        /// How many times a watch started (tests).
        var watchStarts = 0
        var isStopped = false
        /// The last change-log sequence read; nil until it could be read.
        var position: UInt64?
        /// The last change-log sequence of this process's commits the writer has queued for delivery.
        var ownDelivered: UInt64 = 0
        /// What observers get next, in commit order (``deliverQueue()``).
        var queue: [Delivery] = []
        /// Whether a thread is delivering the queue.
        var isDelivering = false
        /// The own entry the last polls stopped at, and how many polls in a row did.
        var stall: (sequence: UInt64, polls: Int)?
        /// Own commits a poll read past without the writer's changes (tests and diagnostics).
        var skippedOwnCommits = 0
        /// LMDB's last transaction id at the last poll.
        var lastTransaction = -1
        /// Type names by number, as `meta` had them.
        var typeNames: [UInt32: String] = [:]
        /// Polls whose read of the log failed (tests and diagnostics).
        var readFailures = 0
        /// Reads of the log that found entries trimmed after the position (tests and diagnostics).
        var lostReads = 0
    }

    private let environment: Environment
    let hub: ObserverHub
    private let changeLog: ChangeLog
    private let meta: Database
    private let pollInterval: Duration
    /// The store's clock, which the poller waits on.
    private let clock: any StorageClock
    let state = Mutex(State())
    let externalChanges = Atomic<Int>(0)
    /// When not 0, the next follower takes its first snapshot for one commit older, as if the last commit, which
    /// wrote the last this many change-log entries, had written its meta page and not let new readers see it yet
    /// (tests; once).
    let startLagForTests = Atomic<Int>(0)
    /// How long the watch of the data file outlives the last observer, in real time (it is an OS thread, not something
    /// the store's clock times). Each load through the cache that misses has observers of its own: one started and
    /// stopped the watch's thread (and its inotify instance, whose close waits for the kernel) at every miss, most of
    /// a miss's CPU time (review-105 F11).
    static let watchLinger = Duration.seconds(1)
    /// When set, used instead of ``watchLinger`` (tests; `.zero` ends the watch with the last observer).
    let watchLingerForTests = Mutex<Duration?>(nil)
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

    /// Registers an active observer (a live query or a change stream); the first one starts the poller.
    ///
    /// Call it before the observer's first read: outside commits before that are in its first result.
    func beginObserving() {
        state.withLock { state in
            guard !state.isStopped else { return }
            state.observers += 1
            state.watchIdleSince = nil
            guard state.poller == nil else { return }
            let changeLog = self.changeLog
            // A commit's meta page (which `lastTransactionID` reads) is written before new read transactions see
            // the commit: a snapshot read in between is older. The position is then the snapshot's, and so must be
            // the transaction the polls compare with, or they would take that commit for read and skip it until
            // the next one (review-105 F1). The watch polls once as it starts, for such a commit and for any between
            // this read and the watch (review-106 R7).
            let transaction = environment.lastTransactionID
            let lag = startLagForTests.exchange(0, ordering: .relaxed)
            do {
                let (position, snapshot) = try environment.read { txn in
                    let last = try changeLog.lastSequence(in: txn)
                    return (last - min(last, UInt64(lag)), txn.id - (lag > 0 ? 1 : 0))
                }
                state.position = position
                state.lastTransaction = min(snapshot, transaction)
            } catch {
                state.position = nil  // read at the first poll, which reruns every observer then
                state.lastTransaction = -1
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
            // The watch left from the last observer polls once, as a new one does as it starts.
            if state.watch?.wake() != true {
                state.watchStarts += 1
                state.watch = DataFileWatch.start(
                    path: dataFilePath, onChange: { [weak self] in self?.pollAfterWrite() },
                    endsIdle: { [weak self] watch in self?.watchEndsIdle(watch) ?? true })
            }
        }
    }

    /// The data file the watch follows.
    private var dataFilePath: String {
        environment.path.hasSuffix("/") ? environment.path + "data.mdb" : environment.path + "/data.mdb"
    }

    /// Unregisters an observer; the last one stops the poller, and the watch ``watchLinger`` later.
    func endObserving() {
        let linger = currentWatchLinger
        state.withLock { state in
            state.observers = max(0, state.observers - 1)
            if state.observers == 0 {
                state.poller?.cancel()
                state.poller = nil
                if linger > .zero {
                    state.watchIdleSince = .now
                } else {
                    state.watch?.stop()
                    state.watch = nil
                }
            }
        }
    }

    /// ``watchLinger``, or what a test set instead.
    private var currentWatchLinger: Duration { watchLingerForTests.withLock { $0 } ?? Self.watchLinger }

    /// Whether `watch` ends now, asked by its thread when it has been idle a while: it does once no observer has
    /// wanted it for ``watchLinger``, or when it is not the store's watch any more.
    private func watchEndsIdle(_ watch: DataFileWatch) -> Bool {
        let linger = currentWatchLinger
        return state.withLock { state in
            guard !state.isStopped, state.watch === watch else { return true }
            guard state.observers == 0, let since = state.watchIdleSince, since.duration(to: .now) >= linger else {
                return false
            }
            state.watch = nil
            return true
        }
    }

    /// Stops polling for good; after it returns the environment is not touched again. Called when the
    /// store closes, before the environment does.
    func stop() {
        state.withLock { state in
            state.isStopped = true
            state.poller?.cancel()
            state.poller = nil
            state.watch?.stop()
            state.watch = nil
        }
    }

    // MARK: - Delivery

    func hasSubscribers(_ typeName: String) -> Bool { hub.hasSubscribers(typeName) }

    /// Queues a commit of this process for its observers, after the other processes' commits the log holds
    /// before it that no poll has queued, and delivers the queue unless another thread is delivering it.
    func publish(_ changes: [PublishedChange], logged: ClosedRange<UInt64>?) {
        let drains = state.withLock { state -> Bool in
            if let logged {
                queueEarlierOutsideChanges(&state, before: logged)
                state.ownDelivered = max(state.ownDelivered, logged.upperBound)
            }
            if !changes.isEmpty { state.queue.append(.changes(changes)) }
            return Self.claimDelivery(&state)
        }
        if drains { deliverQueue() }
    }

    /// Queues the entries other processes wrote between the position and `logged` (a commit of this
    /// process), and moves the position past `logged` once everything before it is queued.
    private func queueEarlierOutsideChanges(_ state: inout State, before logged: ClosedRange<UInt64>) {
        guard !state.isStopped, state.poller != nil, let position = state.position,
            logged.lowerBound > 0, position < logged.upperBound
        else { return }
        if position < logged.lowerBound - 1 {
            do {
                if let earlier = try readOutsideChanges(&state, before: logged.lowerBound) {
                    externalChanges.add(1, ordering: .relaxed)
                    state.queue.append(.changes(earlier))
                }
            } catch {
                // The next poll reads them (after this commit); every observed type reruns now, to be safe.
                state.readFailures += 1
                state.queue.append(.everyObservedType)
                return
            }
        }
        // The commit's own entries need no reading: observers get its changes from the writer.
        if state.position == logged.lowerBound - 1 { state.position = logged.upperBound }
    }

    /// Reads the other processes' changes since the last poll and delivers them; false when polling should end.
    /// `timed` is false for a poll the data file's watch woke: it does not count as one of the polls in a row
    /// that stop at an own commit not queued yet (``pollsBeforeSkippingAnOwnCommit`` counts timed polls).
    private func poll(timed: Bool = true) -> Bool { pollOnce(timed: timed).goesOn }

    /// Polls after the data file's watch saw a write. A commit's writer writes its meta page (which the watch
    /// sees, and ``Environment/lastTransactionID`` reads) just before it lets new read transactions see it, so
    /// a poll in between reads an older snapshot: it polls again until the snapshot holds the commit, 0.2 ms
    /// later and then twice as long each time up to 50 ms, for at most ``pollsAfterAWrite`` polls (about 10 s: a
    /// writer descheduled in between on a loaded machine; one killed there leaves it to the next commit).
    private func pollAfterWrite() {
        var pause: UInt32 = 200
        for _ in 0..<Self.pollsAfterAWrite {
            let (goesOn, behind) = pollOnce(timed: false)
            guard goesOn, behind else { return }
            usleep(pause)
            pause = min(pause * 2, 50_000)
        }
    }

    /// How many times ``pollAfterWrite()`` polls for a commit its snapshot does not hold yet.
    static let pollsAfterAWrite = 210

    /// One poll: whether polling goes on, and whether LMDB's meta page showed a commit the poll's snapshot
    /// did not hold yet.
    private func pollOnce(timed: Bool) -> (goesOn: Bool, behind: Bool) {
        let (goesOn, behind, drains) = state.withLock { state -> (Bool, Bool, Bool) in
            // Under the lock, so that `stop()` never returns while the environment is being read.
            guard !state.isStopped, state.poller != nil else { return (false, false, false) }
            let transaction = environment.lastTransactionID
            guard transaction != state.lastTransaction else { return (true, false, false) }
            var behind = false
            do {
                let (changes, isWhole, snapshot) = try readOutsideChanges(&state, timed: timed)
                // A read that stopped at an own commit not queued yet reads on at the next poll, and so does one
                // whose snapshot is older than the meta page's commit (see `pollAfterWrite`).
                behind = snapshot < transaction
                if isWhole { state.lastTransaction = min(snapshot, transaction) }
                if let changes {
                    externalChanges.add(1, ordering: .relaxed)
                    state.queue.append(changes.isEmpty ? .everyObservedType : .changes(changes))
                }
            } catch {
                // The log cannot be read now: every observed type reruns, to be safe, and the next poll
                // reads the same entries again.
                state.readFailures += 1
                externalChanges.add(1, ordering: .relaxed)
                state.queue.append(.everyObservedType)
            }
            return (true, behind, Self.claimDelivery(&state))
        }
        if drains { deliverQueue() }
        return (goesOn, behind)
    }

    /// How many polls in a row may stop at one own commit the writer has not queued before the poll reads
    /// past it: a commit whose changes never come (its `mdb_txn_commit` failed after writing) must not stop
    /// other processes' changes from reaching observers for good.
    static let pollsBeforeSkippingAnOwnCommit = 20

    /// The change-log entries after the position that other processes wrote, as published changes, and
    /// whether the read reached the end of the log. It stops at an entry of this process that the writer has
    /// not queued yet, at most ``pollsBeforeSkippingAnOwnCommit`` polls in a row.
    private func readOutsideChanges(
        _ state: inout State, timed: Bool
    ) throws -> (changes: [PublishedChange]?, isWhole: Bool, snapshot: Int) {
        guard state.position != nil else {
            let changeLog = self.changeLog
            let (position, snapshot) = try environment.read { txn in (try changeLog.lastSequence(in: txn), txn.id) }
            state.position = position
            return ([], true, snapshot)
        }
        var stoppedAt: UInt64?
        var snapshot = 0
        let changes = try readOutsideChanges(&state, before: nil, snapshot: &snapshot) { stoppedAt = $0 }
        guard let stoppedAt else {
            state.stall = nil
            return (changes, true, snapshot)
        }
        let before = state.stall?.sequence == stoppedAt ? state.stall?.polls ?? 0 : 0
        let polls = before + (timed ? 1 : 0)
        state.stall = (stoppedAt, polls)
        if polls >= Self.pollsBeforeSkippingAnOwnCommit {
            state.ownDelivered = max(state.ownDelivered, stoppedAt)
            state.skippedOwnCommits += 1
        }
        return (changes, false, snapshot)
    }

    /// The entries other processes wrote after the position (and before `end`, when given), as published
    /// changes; nil when there are none. `stopped` gets the sequence of an own entry not queued yet, where the
    /// read stops. The position moves only when the entries became changes.
    private func readOutsideChanges(
        _ state: inout State, before end: UInt64?, snapshot: UnsafeMutablePointer<Int>? = nil,
        stopped: (UInt64) -> Void = { _ in }
    ) throws -> [PublishedChange]? {
        let changeLog = self.changeLog
        let own = changeLog.writer
        var entries: [ChangeLog.Entry] = []
        guard var position = state.position else { return nil }
        let ownDelivered = state.ownDelivered
        var lost = false
        try environment.read { txn in
            snapshot?.pointee = txn.id
            // Entries trimmed past the position (another process's large batch): no change names those records.
            let trimmed = try changeLog.trimmedThrough(in: txn)
            lost = trimmed > position
            let start = position
            try changeLog.forEachEntry(after: position, in: txn) { entry in
                if let end, entry.sequence >= end { return false }
                if entry.writer == own {
                    guard entry.sequence <= ownDelivered else {
                        // This process's own large batch, right after the trim mark: its publication tells whether
                        // others' entries went with it (``queueEarlierOutsideChanges(_:before:)``), not this read.
                        if position == start, entry.sequence == trimmed + 1 { lost = false }
                        stopped(entry.sequence)
                        return false
                    }
                } else {
                    entries.append(entry)
                }
                position = entry.sequence
                return true
            }
        }
        if lost {
            // Every observed type reruns and every record's watch reads again (trial87 #3); streams cannot tell.
            state.lostReads += 1
            state.queue.append(.everyObservedType)
        }
        guard !entries.isEmpty else {
            state.position = position
            return nil
        }
        if entries.contains(where: { state.typeNames[$0.type] == nil }) {
            let meta = self.meta
            let infos = try environment.read { txn in try TypeRegistry.all(meta: meta, txn: txn).infos }
            for info in infos { state.typeNames[info.number] = info.name }
        }
        state.position = position
        let typeNames = state.typeNames
        return ChangeLog.latestPerRecord(entries).compactMap { entry in
            typeNames[entry.type].map { PublishedChange(otherProcesss: entry, typeName: $0) }
        }
    }
}
