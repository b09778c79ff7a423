/// Following the server: the applier takes change notices from the subscription in sequence order and applies
/// them to the local store (after a lost connection it catches up first: SharedTier+CatchUp.swift; the rule in
/// ``SharedTier``).
extension SharedTier {
    func follow(_ stream: AsyncStream<SubscriberEvent>) async {
        for await event in stream {
            switch event {
            case .subscribed, .catchUp:
                await catchUpUntilDone()
            case .message(let bytes):
                if let hold = beforeNotice.withLock({ $0 }) { await hold() }
                // No hearing: taken after a pause, a notice sent long ago says nothing of the changes behind it
                // (/work/review-76.md #4). The heartbeat's replies, which come behind them, do.
                await handle(bytes)
            case .heard(let sentAt):
                // The server's state when the PING went out: every change published before is received.
                update { state in
                    state.heard(at: sentAt)
                    state.outcomes += 1
                }
            case .disconnected(let error):
                connection.reconnectNextTime()
                let now = clock.uptime()
                let wasUp = update { state -> Bool in
                    let wasUp = state.phase != .down
                    state.phase = .down
                    state.lastError = error
                    state.lastFailureAt = now
                    state.outcomes += 1
                    return wasUp
                }
                if wasUp {
                    logger?.log(
                        level: .warning, message: "Lost the shared tier; serving local records until it is back",
                        metadata: ["server": settings.redactedURL, "error": "\(error)"])
                }
            }
        }
    }

    private func handle(_ bytes: [UInt8]) async {
        guard let notice = SharedTierNotice(bytes), notice.database == UInt32(truncatingIfNeeded: endpoint.database)
        else {
            return
        }
        // No position: a change failed to apply before the first one did (see `commitLocally`), and the catch-up
        // it asked for is not done yet.
        guard let position = state.withLock({ $0.receivedSeq }) else {
            await catchUpUntilDone()
            return
        }
        guard notice.sequence > position else {
            // Sequence 1 again, after later ones: the server started its count anew (FLUSHALL, or a restart
            // without its data while this connection lived). The catch-up sees the count went back and drops
            // the local records.
            if notice.sequence == 1 && position >= 1 { await catchUpUntilDone() }
            return
        }
        if notice.sequence > position + 1 {
            // A change went by unseen: catch up from the log, which also brings this one.
            await catchUpUntilDone()
            return
        }
        state.withLock { state in
            state.receivedSeq = notice.sequence
            state.lastEntry = (notice.sequence, notice.identity)
        }
        let change = LocalChange(
            kind: notice.kind, type: notice.type, id: notice.id,
            record: notice.record.isEmpty ? nil : notice.record, byThisInstance: notice.sender == sender)
        commitLocally([change], through: notice.sequence)
        if notice.sequence == 1 { await learnEpoch() }
    }

    /// Reads the epoch of the history whose first change this instance just took (so that a later catch-up can
    /// tell whether the history it comes back to is still that one). On failure the instance does not know it:
    /// its next catch-up drops the local records, which is always safe.
    private func learnEpoch() async {
        guard state.withLock({ $0.epoch?.value == nil }) else { return }
        do {
            let (_, epoch) = try await sequenceAndEpoch()
            if let epoch { update { $0.epoch = (epoch, 1) } }
        } catch {
            logger?.log(
                level: .debug, message: "Could not read the shared tier's epoch",
                metadata: ["error": "\(LocalStorageError.wrapping(error))"])
        }
    }

    /// One change to apply to the local store.
    struct LocalChange: Sendable {
        let kind: UInt8
        let type: String
        let id: String
        /// The record's bytes for a put; nil for a delete (or a record that is gone).
        let record: [UInt8]?
        /// Whether this instance made the change (its own clear was applied here when it was admitted).
        var byThisInstance = false
    }

    /// Queues changes for the writer without waiting; `sequence` becomes the applied position once they are in.
    private func commitLocally(_ changes: [LocalChange], through sequence: Int64) {
        let logger = self.logger
        core.writer.queueForNextCommit(
            { [self] context in
                keepRollbackPoint(in: context)
                for change in changes { try apply(change, at: sequence, context: context) }
                // The writer's view moves now (later work in this transaction sees it); waiters wake once the
                // transaction is committed, so what they read next holds the change.
                let applied = state.withLock { state in
                    state.recentChanges.note(changes, at: sequence)
                    state.appliedSeq = max(state.appliedSeq ?? Int64.min, sequence)
                    state.forgetLocalAhead(through: state.appliedSeq ?? sequence)
                    return state.appliedSeq
                }
                context.onCommit { [self] in update { state in state.noteLocalCommit(through: applied) } }
            },
            finish: { [self] error in
                guard let error else { return }
                // The local copies those changes name are out of date, and nothing may serve them: reads wait
                // while the tier catches up from its position before them (the applied position the aborted
                // transaction moved was rolled back), which brings the changes again (or, with no position,
                // drops the local records).
                let failure = LocalStorageError.wrapping(error)
                update { state in
                    state.recentChanges.note(changes, at: sequence)
                    state.receivedSeq = state.appliedSeq
                    state.phase = .syncing
                    state.lastError = failure
                }
                events.yield(.catchUp)
                logger?.log(
                    level: .error, message: "Could not apply a change from the shared tier; catching up",
                    metadata: ["error": "\(failure)"])
            })
    }

    /// Keeps what the applier's view holds now (the applied position, the copies noted ahead of it) to restore
    /// should `context`'s transaction not commit: changes made to it in a transaction that aborts, before its
    /// requests run again or fail, would otherwise outlive it (a notice skipped and announced in an aborted
    /// attempt went unannounced when it ran again; a position moved by a failed commit made the catch-up skip
    /// the change). Called before the first change in each transaction; every change to these is made by
    /// the writer.
    func keepRollbackPoint(in context: CommitQueue.Context) {
        context.onAbort(once: self) {
            let (applied, ahead, cleared) = state.withLock { ($0.appliedSeq, $0.localAhead, $0.clearedAhead) }
            return { [self] in
                state.withLock { state in
                    state.appliedSeq = applied
                    state.localAhead = ahead
                    state.clearedAhead = cleared
                }
            }
        }
    }

    /// Applies one change, the server's state at `sequence`, inside the writer's transaction; a record whose
    /// local copy already reflects that sequence or a later one (``State/localAhead``) is left as it is, and
    /// the change only announced when a fill, which announces nothing, put the copy there.
    func apply(_ change: LocalChange, at sequence: Int64, context: CommitQueue.Context) throws {
        let clearedAt = state.withLock { $0.clearedAhead[ExactName(change.type)] }
        if let clearedAt, sequence < clearedAt, change.kind == UInt8(ascii: "P") || change.kind == UInt8(ascii: "D") {
            // Before this instance's own clear of the type, which already ran here: it would bring back a record
            // the clear removed (served until the clear's notice came). The observers heard of the clear.
            return
        }
        if change.kind == UInt8(ascii: "P") || change.kind == UInt8(ascii: "D") {
            let record = ExactName(SharedTierRecentChanges.record(type: change.type, id: change.id))
            let ahead = state.withLock { $0.localAhead[record] }
            if let ahead, ahead.sequence >= sequence {
                guard let announcedLive = ahead.announcedLive else { return }
                guard let schema = try localSchema(named: change.type, context: context) else { return }
                if try fillStillHeld(change, schema: schema, context: context) {
                    let live = announceSkipped(
                        change, shownLive: announcedLive, previous: ahead.announcedRecord, schema: schema,
                        context: context)
                    state.withLock { state in
                        state.localAhead[record]?.announcedLive = live
                        state.localAhead[record]?.announcedRecord = change.record
                    }
                    return
                }
                // The fill's copy left the store (evicted, expired and purged): nothing here is ahead of this
                // change any more, which applies as to any record this instance does not hold.
                state.withLock { $0.localAhead[record] = nil }
            }
        }
        guard let schema = try localSchema(named: change.type, context: context) else { return }
        switch change.kind {
        case UInt8(ascii: "C"):
            // Another instance's clear also runs with no local record: it ends this instance's remembered nils of
            // the type, and live queries, which run on the server, rerun. This instance's own clear ran when it
            // was admitted (or, when it was not, with records here to clear): running it again would announce
            // it twice.
            let ranWhenAdmitted = change.byThisInstance && clearedAt == sequence
            if try !ranWhenAdmitted && (!change.byThisInstance || context.txn.entryCount(schema.records) > 0) {
                try RecordWriter.clear(schema: schema, context: context)
            }
            // Copies written ahead of this clear went with it: the notices of their writes must bring them back.
            state.withLock { $0.forgetLocalAhead(ofType: change.type) }
        case UInt8(ascii: "P"), UInt8(ascii: "D"):
            let key = Array(change.id.utf8)
            guard !key.isEmpty, key.count <= 511 else { return }
            if let record = change.record {
                do {
                    _ = try record.withUnsafeBytes { buffer throws(LocalStorageError) in
                        try RecordView(sharedTierRecord: buffer)
                    }
                } catch {
                    // Not a record (written by something else under our key): drop the local copy, so that a
                    // read goes to the server and reports it.
                    logger?.log(
                        level: .error, message: "The shared tier holds a damaged record; dropped the local copy",
                        metadata: ["type": change.type, "id": change.id, "error": "\(error)"])
                    try RecordWriter.delete(id: change.id, key: key, schema: schema, context: context)
                    return
                }
                try RecordWriter.putReplica(record, key: key, value: nil, schema: schema, context: context)
            } else if try !RecordWriter.delete(id: change.id, key: key, schema: schema, context: context) {
                // Not held here (evicted from the near cache, or never read): live queries, which run on the server,
                // still show it until they rerun (trial58 D4). Published here only: nothing in this store changed, so
                // nothing is logged (every instance on the namespace hears the notice itself, and a log entry per
                // remote delete would use up the change log's retention for every type).
                context.publish(PublishedChange(typeName: schema.name, kind: .touched))
            }
        case UInt8(ascii: "L"):
            // A load's lease ended without a record (the load failed or found nothing): wakes the callers
            // waiting on it here, and in the other processes on this store (through the change log).
            let key = Array(change.id.utf8)
            guard !key.isEmpty, key.count <= 511 else { return }
            context.touch(schema, id: key)
        default:
            return
        }
    }

    /// Whether the copy of `change`'s record that a fill wrote ahead of it is still in the local store.
    private func fillStillHeld(_ change: LocalChange, schema: TypeSchema, context: CommitQueue.Context) throws -> Bool {
        let key = Array(change.id.utf8)
        guard !key.isEmpty, key.count <= 511 else { return false }
        return try context.txn.get(schema.records, key: key) != nil
    }

    /// Announces a put or delete whose record a fill already brought here (the fill told no observer): logs
    /// and publishes what applying it would have, an insert where the changes announced so far do not show
    /// the record live, and a touch for a new time to live (a put that differs from `previous`, the record as last
    /// announced, in its expiry alone). Returns whether they show it live now.
    private func announceSkipped(
        _ change: LocalChange, shownLive: Bool, previous: [UInt8]?, schema: TypeSchema, context: CommitQueue.Context
    ) -> Bool {
        let key = Array(change.id.utf8)
        guard let record = change.record else {
            if shownLive {
                // The record is still here (the fill's copy, newer than this delete): it keeps its place in the
                // eviction order.
                context.log(schema, .deleted, id: key, recordStays: true)
                context.publish(PublishedChange(typeName: schema.name, kind: .deleted(change.id)))
            } else {
                context.publish(PublishedChange(typeName: schema.name, kind: .touched))
            }
            return false
        }
        if shownLive, let previous,
            previous.withUnsafeBytes({ RecordWriter.differInExpiryAlone($0, record) })
        {
            context.touch(schema, id: key)
            return true
        }
        context.log(schema, shownLive ? .updated : .inserted, id: key)
        if context.isObserved(schema.name) {
            let kind: PublishedChange.Kind =
                shownLive ? .externalUpdated(change.id) : .externalInserted(change.id)
            context.publish(PublishedChange(typeName: schema.name, kind: kind))
        }
        return true
    }

    /// The open schema of a stored type named `name`: this process's own, or opened from `meta`; nil when the
    /// local store has never held the type (then it has no copy to change).
    func localSchema(named name: String, context: CommitQueue.Context) throws -> TypeSchema? {
        // By bytes: a type whose name differs only in Unicode normalization is another type.
        let exact = ExactName(name)
        if let own = core.schemas.withLock({ $0.ready.values.first { ExactName($0.name) == exact } }) { return own }
        if let opened = state.withLock({ $0.schemasByName[exact] }) { return opened }
        guard let info = try TypeRegistry.info(named: name, meta: core.meta, txn: context.txn) else { return nil }
        let schema = try StoreCore.schema(for: info, in: context.txn)
        // Handles opened in a transaction are valid once it commits.
        context.onCommit { [self] in state.withLock { $0.schemasByName[exact] = schema } }
        return schema
    }
}
