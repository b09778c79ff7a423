import Synchronization

/// What tests and diagnostics read of the follower of other processes' commits.
extension LiveQueryCenter {
    /// The number of active live queries.
    var observerCount: Int { state.withLock { $0.observers } }

    /// How many times the poller saw outside commits and told live queries to rerun.
    var externalChangeCount: Int { externalChanges.load(ordering: .relaxed) }

    /// How many own commits a poll read past because their changes never reached the queue.
    var skippedOwnCommitCount: Int { state.withLock { $0.skippedOwnCommits } }

    /// How many polls could not read the change log.
    var readFailureCount: Int { state.withLock { $0.readFailures } }

    /// How many reads of the change log found that entries after the position had been trimmed.
    var lostReadCount: Int { state.withLock { $0.lostReads } }

    /// The change-log position the poller has read up to.
    var followedPosition: UInt64? { state.withLock { $0.position } }

    /// The watch of the data file while an observer is active, and ``watchLinger`` after the last one (tests).
    var watch: DataFileWatch? { state.withLock { $0.watch } }

    /// How many times a watch of the data file started (tests).
    var watchStarts: Int { state.withLock { $0.watchStarts } }

    /// Whether the poller runs (it runs exactly while a live query is active).
    var isPolling: Bool { state.withLock { $0.poller != nil } }
}
