/// When local records may be served, and waiting for this instance's own writes to land
/// (the resynchronisation rule and the staleness bound in ``SharedTier``).
extension SharedTier {
    /// What a read of local records may do now.
    enum ReadAdmission: Sendable {
        /// Serve the local records.
        case serve
        /// Wait for the next attempt to reach the server to end (asking for one at once when `kick`), then look again.
        case wait(kick: Bool)
        /// Throw `sharedTierUnavailable` with this reason.
        case refuse(String)
        /// The server answers, but changes it sent wait in the writer's queue: wait for their local commit.
        case awaitLocalCommit
    }

    /// Returns when local records may be served; waits while the instance connects or catches up, and while
    /// a reconnection it asked for (the local copy is older than ``SharedTierConfiguration/maxStaleness``) is
    /// under way.
    ///
    /// - Throws: `sharedTierUnavailable` when the instance has not heard from the server for longer than
    ///   `maxStaleness` and the server cannot be reached now.
    nonisolated(nonsending) func awaitSettled() async throws(LocalStorageError) {
        var waits = 0
        while true {
            let now = clock.uptime()
            let waited = waits
            let (admission, mark) = state.withLock { state -> (ReadAdmission, Int) in
                (self.admission(of: state, now: now, waits: waited), state.outcomes)
            }
            switch admission {
            case .serve:
                return
            case .refuse(let reason):
                throw .sharedTierUnavailable(reason)
            case .awaitLocalCommit:
                // Until a hearing counts (each local commit of the changes one waits on) or the tier's state
                // changes; then the rule is asked again.
                await waitUnlessCancelled { $0.outcomes > mark || $0.phase != .live }
            case .wait(let kick):
                if kick {
                    connection.retrySoon()
                    subscriber.kick()
                }
                waits += 1
                await waitUnlessCancelled { $0.outcomes > mark }
            }
            // A caller whose task is cancelled stops waiting (a stalled server would hold it for `readTimeout`).
            if Task.isCancelled {
                throw .sharedTierUnavailable(RESPConnection.cancelledByCaller + "while it waited for \(endpoint.label)")
            }
        }
    }

    /// After `failure`, returns true once local records may be served again (the instance has reconnected and caught
    /// up); false at once when `failure` is the server's answer rather than its silence (``isOutage(_:)``: a refusal
    /// that waiting would not cure), and when the tier stops (the store closes) or the task is cancelled.
    ///
    /// It waits for the next outcome (a heartbeat's reply, a reconnection, a commit of the server's changes) before
    /// each try, the first included, so a request that keeps failing is tried again at that pace, never in a loop.
    nonisolated(nonsending) func awaitServable(after failure: LocalStorageError) async -> Bool {
        guard isOutage(failure) else { return false }
        var mark = state.withLock { state -> Int in
            state.servableWaits += 1
            return state.outcomes
        }
        logger?.log(
            level: .warning, message: "A live query keeps its last result until the shared tier can be read again",
            metadata: ["server": settings.redactedURL, "error": "\(failure)"])
        while true {
            let seen = mark
            await waitUnlessCancelled { $0.outcomes > seen }
            if Task.isCancelled || state.withLock({ $0.isStopped }) { return false }
            // Read before the try: an outcome during or after it ends the next wait at once.
            mark = state.withLock { $0.outcomes }
            do {
                try await awaitSettled()
                logger?.log(
                    level: .info, message: "A live query runs again: the shared tier can be read",
                    metadata: ["server": settings.redactedURL])
                return true
            } catch {
                // Not heard from for longer than `maxStaleness`, and the server cannot be reached now: wait for the
                // next attempt's outcome.
            }
        }
    }

    /// Whether `error` says the server did not answer (it could not be reached, a request went out and no reply
    /// came, or this instance has not heard from it lately) rather than that it answered with a refusal (an error
    /// reply: a permission, a key of another kind).
    func isOutage(_ error: LocalStorageError) -> Bool {
        guard case .sharedTierUnavailable(let reason) = error else { return false }
        if RESPConnection.mayHaveBeenApplied(error) || RESPSocket.isConnectionFailure(error)
            || RESPConnection.wasQueuedBehindSilence(error)
        {
            return true
        }
        return state.withLock { $0.phase != .live } || Self.staleReasons.contains { reason.hasPrefix($0) }
    }

    /// The rule: in sync and heard from within `maxStaleness` (or disconnected less than that ago): serve.
    /// Connecting or catching up: wait for it, once, or as long as the server answers (heard from within
    /// `maxStaleness`: a catch-up a notice started right after the read's first wait ended). Stale: ask for a reconnection now and wait for its outcome,
    /// unless an attempt failed less than `reconnectDelay` ago (attempts never come faster than that). A live
    /// connection that is merely quiet (a heartbeat late on a loaded machine) gets a few outcomes to answer
    /// before the read gives up; a connection that is down gets one.
    func admission(of state: State, now: Duration, waits: Int) -> ReadAdmission {
        let hasWaited = waits > 0 && (state.phase != .live || waits >= Self.liveAttempts)
        if state.isStopped { return .refuse("the store is closing") }
        let isFresh = state.lastHeard.map { now - $0 <= settings.maxStaleness } ?? false
        switch state.phase {
        case .live, .down:
            if isFresh { return .serve }
            // Heard from lately, with changes not committed here yet (a busy writer, or a read right after a
            // pause that found them waiting): their commit makes the local records current.
            if state.phase == .live, let pending = state.latestPendingHearing, now - pending <= settings.maxStaleness {
                return .awaitLocalCommit
            }
        case .connecting, .syncing:
            // A catch-up while the server answers (a notice that starts one, right after the first): wait for it.
            if !hasWaited || isFresh { return .wait(kick: false) }
        }
        let reason = staleness(state, now: now)
        if hasWaited { return .refuse(reason) }
        if state.phase != .live, let failed = state.lastFailureAt, now - failed < settings.reconnectDelay {
            return .refuse(reason)
        }
        return .wait(kick: true)
    }

    /// How many outcomes a read waits for on a live but quiet connection before it gives up.
    static let liveAttempts = 4

    /// How the reasons ``staleness(_:now:)`` gives begin: never in sync, not heard from for too long.
    private static let staleReasons = ["not yet in sync with the shared tier", "no word from the shared tier"]

    /// Why local records cannot be served: never in sync, or not heard from for too long, and the last error.
    private func staleness(_ state: State, now: Duration) -> String {
        let cause = state.lastError.map { ": " + RESPConnection.reason(of: $0) } ?? ""
        guard let heard = state.lastHeard else {
            return "\(Self.staleReasons[0]) at \(endpoint.label), so no local record can be trusted" + cause
        }
        return "\(Self.staleReasons[1]) at \(endpoint.label) for \((now - heard).roundedToMilliseconds) (maxStaleness "
            + "\(settings.maxStaleness)), so local records may be out of date" + cause
    }

    /// ``State/admitsOwn(_:)`` for an own clear of `type` in `context`'s transaction, which, when admitted, is noted as
    /// ahead of the applier (``State/clearedAhead``): the type's older notices, applied later, leave the cleared
    /// store alone. The note goes if the transaction does not commit.
    func admitsOwnClear(_ sequence: Int64, type: String, context: CommitQueue.Context) -> Bool {
        keepRollbackPoint(in: context)
        return state.withLock { state in
            guard state.admitsOwn(sequence) else { return false }
            state.clearedAhead[ExactName(type)] = max(state.clearedAhead[ExactName(type)] ?? .min, sequence)
            state.forgetLocalAhead(ofType: type)  // The clear removes those copies.
            return true
        }
    }

    /// The update time for this instance's next write on the server: the clock's, or one nanosecond past the
    /// last one when the clock has not moved since (a frozen test clock, two readings in one nanosecond). A save
    /// always changes the record's update time, so a record that differs from its copy in its expiry alone is a
    /// new time to live (`setExpiration`, which keeps the update time), never a save.
    func nextWriteTime() -> Int64 {
        let now = clock.wallNanoseconds()
        return state.withLock { state in
            state.lastWriteTime = max(now, state.lastWriteTime &+ 1)
            return state.lastWriteTime
        }
    }

    /// ``State/admitsOwn(_:)`` for an own write (or delete) of one record in `context`'s transaction, which, when
    /// admitted, is noted as ahead of the applier (``State/localAhead``): its own and older notices, applied
    /// later, leave it alone. The note goes if the transaction does not commit.
    ///
    /// - Returns: nil when the write is not admitted; otherwise whether the local copy it replaces is one a
    ///   fill wrote that this instance's observers have not heard of (an own save over it is announced as an
    ///   insert: they hear of the record then, and the notices the fill got ahead of stay silent).
    func admitsOwn(
        _ sequence: Int64, type: String, id: String, context: CommitQueue.Context
    ) -> OwnAdmission? {
        keepRollbackPoint(in: context)
        return state.withLock { state in
            guard state.admitsOwn(sequence) else { return nil }
            let record = ExactName(SharedTierRecentChanges.record(type: type, id: id))
            let overUnannouncedFill = state.localAhead[record]?.announcedLive == false
            state.noteLocalAhead(type: type, id: id, at: sequence)
            return OwnAdmission(overUnannouncedFill: overUnannouncedFill)
        }
    }

    /// An own write of one record that may be written locally (``admitsOwn(_:type:id:context:)``).
    struct OwnAdmission {
        /// Whether the local copy it replaces is one a fill wrote that this instance's observers have not heard of.
        let overUnannouncedFill: Bool
    }

    /// After an own write that was not admitted (a catch-up was running), waits until the local store holds it
    /// or something later, or the subscription is lost (then the next catch-up brings it), or the calling task
    /// is cancelled.
    ///
    /// When a write of this instance showed that the server started its count anew
    /// (``noteIssued(_:appliedBefore:)``), it catches up instead, which drops the local records, so that the
    /// next read goes to the server.
    func awaitApplied(_ sequence: Int64) async {
        let startedAnew = state.withLock { state -> Bool in
            defer { state.countStartedAnew = false }
            return state.countStartedAnew
        }
        if startedAnew {
            // In a task of its own: the writer's cancellation must not cut the catch-up short (its reads of the
            // server stop for a cancelled caller, and the tier would be left down: /work/review-78.md #1).
            await Task { await self.catchUpUntilDone() }.value
            return
        }
        // A cancelled caller stops waiting: its write is on the server, and the local store gets it in turn.
        await waitUnlessCancelled { ($0.appliedSeq ?? Int64.min) >= sequence || $0.phase == .down }
    }

    /// How many reads and own writes wait for the tier's state to change (tests hold the applier only while
    /// none does).
    var waiterCount: Int { state.withLock { $0.waiters.count } }
}
