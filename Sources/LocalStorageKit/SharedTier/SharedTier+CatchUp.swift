/// Catching up with the server after a lost connection or a missed notice: the changes after this instance's
/// position from the server's change log, or, when the log no longer reaches back (or the server's history
/// changed), dropping the local records (the rule in ``SharedTier``).
extension SharedTier {
    func catchUpUntilDone() async {
        var delay = settings.reconnectDelay
        while !Task.isCancelled {
            do {
                try await catchUp()
                return
            } catch {
                let now = clock.uptime()
                update { state in
                    state.phase = .down
                    state.lastError = LocalStorageError.wrapping(error)
                    state.lastFailureAt = now
                    state.outcomes += 1
                }
                logger?.log(
                    level: .warning, message: "Could not catch up with the shared tier; retrying",
                    metadata: ["server": settings.redactedURL, "error": "\(LocalStorageError.wrapping(error))"])
            }
            do {
                try await clock.sleep(for: delay)
            } catch {
                return
            }
            delay = min(delay * 2, settings.maxReconnectDelay)
        }
    }

    /// Brings the local store up to the server's sequence (see the rule in the type's documentation).
    private func catchUp() async throws {
        try await checkNamespaceKey()
        let (previous, known, lastEntry) = update {
            state -> (Int64?, (value: [UInt8]?, sequence: Int64)?, (sequence: Int64, identity: Int)?) in
            state.phase = .syncing
            return (state.receivedSeq, state.epoch, state.lastEntry)
        }
        let (server, epoch) = try await sequenceAndEpoch()
        // The change at this instance's position, when it knows which it took there: the log's must be that one.
        let checked = lastEntry.flatMap { $0.sequence == previous ? $0 : nil }
        // From no history at all (sequence 0, no epoch), the history that began since is the one followed, unless
        // this instance took changes of it without learning its epoch (see `handle`): then it cannot tell.
        let historyStartedAnew =
            known.map { $0.value != epoch && !($0.value == nil && $0.sequence == 0 && (previous ?? 0) == 0) } ?? false
        var changes: [LocalChange] = []
        var drop = false
        /// Whether the drop is for a history that started anew since this instance's position (a flush, a server
        /// that lost its data): not a fresh start, whose records are fills (no change), nor a log that lost changes.
        var newHistory = false
        /// The change at `server`, for the next catch-up to check (nil: not read, or none).
        var serverEntry: SharedTierNotice?
        if previous != nil, historyStartedAnew {
            // The count started anew while this instance was away (the server lost its data, or was flushed),
            // and may have passed this instance's position since.
            drop = true
            newHistory = true
            logger?.log(
                level: .warning,
                message: "The shared tier's change history started anew (its data was lost?); dropping local records",
                metadata: ["server": settings.redactedURL])
        } else if let previous, server >= previous, let checked,
            try await logEntries(from: previous, through: previous).first?.identity != checked.identity
        {
            // Another change holds this instance's position: the server lost changes (restarted from an older
            // snapshot, or failed over to a replica that was behind) and counted past them again.
            drop = true
            logger?.log(
                level: .warning,
                message: "The shared tier lost changes this instance had taken (restarted from an older snapshot?); "
                    + "dropping local records", metadata: ["server": settings.redactedURL, "position": "\(previous)"])
        } else if let previous, server == previous {
            // Nothing changed while away.
        } else if let previous, server > previous {
            let entries = try await logEntries(from: previous &+ 1, through: server)
            // A gap past Int64 (a server that answered nonsense once) is one the log cannot cover.
            let gap = server.subtractingReportingOverflow(previous)
            if entries.first?.sequence != previous &+ 1 || gap.overflow || Int64(entries.count) < gap.partialValue {
                drop = true
                logger?.log(
                    level: .warning,
                    message: "The shared tier's change log no longer reaches back to this "
                        + "instance's position; dropping local records",
                    metadata: [
                        "position": "\(previous)",
                        "server": "\(server)",
                    ])
            } else {
                changes = try await currentState(of: entries)
                serverEntry = entries.last
            }
        } else {
            // A fresh start (no position), or a server that lost its data: nothing local can be trusted.
            drop = true
            newHistory = previous != nil
            if previous != nil {
                logger?.log(
                    level: .warning,
                    message: "The shared tier's sequence went back (its data was lost?); "
                        + "dropping local records", metadata: ["server": settings.redactedURL])
            }
        }
        // A history that started anew and whose log still holds all of it (a flush, then a few writes): its changes
        // are applied after the drop, so that the records written since are held again and observers hear of them
        // after the `.cleared` (the first write after a FLUSHALL was announced nowhere: /work/trial76.md #1).
        // Only for a new history: at a fresh start the records the log names are no changes to this instance
        // (filling the near cache is not a change: /work/review-76.md #2).
        if newHistory, server > 0, server <= Int64(settings.changeLogRetention) {
            let entries = try await logEntries(from: 1, through: server)
            if Int64(entries.count) == server, entries.first?.sequence == 1 {
                changes = try await currentState(of: entries)
                serverEntry = entries.last
            }
        }
        if drop && server > 0 && serverEntry == nil {
            serverEntry = try await logEntries(from: server, through: server).first
        }
        let position: (sequence: Int64, identity: Int)? =
            serverEntry.flatMap { $0.sequence == server ? (server, $0.identity) : nil }
            ?? (!drop && server == previous ? checked : nil)
        let core = self.core
        let dropped = drop
        try await core.writer.perform { [self] context in
            // Should the commit fail, the position stays where it was, and the next catch-up starts from there.
            keepRollbackPoint(in: context)
            let before = state.withLock { ($0.receivedSeq, $0.lastEntry, $0.epoch) }
            // Another catch-up (the follow loop's and an own write's after a flush run at once) or the applier
            // moved the position since this one read it, to `server` or past it in the same history: this one
            // has nothing to add, and would take the position back or drop what the other applied
            // (/work/review-76.md #3).
            if let received = before.0, received >= server, before.2?.value == epoch,
                received != previous || before.2?.value != known?.value || before.2?.sequence != known?.sequence
            {
                // In sync as the other left it (this catch-up marked the tier syncing when it began).
                context.onCommit { [self] in
                    let now = clock.uptime()
                    update { state in
                        state.phase = .live
                        state.lastHeard = max(state.lastHeard ?? now, now)
                        state.outcomes += 1
                        state.catchUps += 1
                    }
                }
                return
            }
            context.onAbort { [self] in
                state.withLock { state in (state.receivedSeq, state.lastEntry, state.epoch) = before }
            }
            if dropped {
                for info in try StoreCore.typeInfos(meta: core.meta, in: context.txn) {
                    guard let schema = try localSchema(named: info.name, context: context) else { continue }
                    if try context.txn.entryCount(schema.records) > 0 {
                        try RecordWriter.clear(schema: schema, context: context)
                    }
                }
            }
            if dropped {
                state.withLock { state in  // Those copies are gone, and the clears ahead with them.
                    state.localAhead = [:]
                    state.clearedAhead = [:]
                }
            }
            for change in changes { try apply(change, at: server, context: context) }
            state.withLock { state in
                if dropped { state.recentChanges.forgetAll(before: server) }
                state.recentChanges.note(changes, at: server)
                state.appliedSeq = server
                state.forgetLocalAhead(through: server)
                state.receivedSeq = server
                state.lastEntry = position
                state.epoch = (epoch, server)
            }
            // Reads go ahead once the catch-up is committed.
            context.onCommit { [self] in
                let now = clock.uptime()
                update { state in
                    state.phase = .live
                    state.committedSeq = server
                    state.pendingHearings = []
                    state.lastHeard = now
                    state.outcomes += 1
                    state.catchUps += 1
                    if dropped { state.drops += 1 }
                }
            }
        }
    }

    /// The change log's entries with sequences `first...last`, in order (those the log still holds).
    private func logEntries(from first: Int64, through last: Int64) async throws -> [SharedTierNotice] {
        let reply = try await connection.call([
            Array("ZRANGEBYSCORE".utf8), layout.log, Array("\(first)".utf8), Array("\(last)".utf8),
        ])
        return (reply.elements ?? []).compactMap { $0.bytes.flatMap(SharedTierNotice.init) }
    }

    /// The changes that bring local copies to the server's present state: for each record the log names (at
    /// its last mention), its current bytes; clears in their place.
    private func currentState(of entries: [SharedTierNotice]) async throws -> [LocalChange] {
        let database = UInt32(truncatingIfNeeded: endpoint.database)
        let relevant = entries.filter { $0.database == database }
        var last: [ExactName: Int] = [:]
        // Clears and lease notices name no record to read again.
        let named = { (entry: SharedTierNotice) in entry.kind != UInt8(ascii: "C") && entry.kind != UInt8(ascii: "L") }
        for (position, entry) in relevant.enumerated() where named(entry) {
            last[ExactName(entry.type + "\u{0}" + entry.id)] = position
        }
        let mentions = relevant.enumerated().filter {
            named($0.element)
                && last[ExactName($0.element.type + "\u{0}" + $0.element.id)] == $0.offset
        }
        let keys = mentions.map {
            layout.record(type: SharedTierLayout.escape($0.element.type), id: Array($0.element.id.utf8))
        }
        let current = try await records(keys: keys)
        var byPosition: [Int: [UInt8]?] = [:]
        for (index, item) in mentions.enumerated() { byPosition[item.offset] = current[index] }
        var changes: [LocalChange] = []
        for (position, entry) in relevant.enumerated() {
            if entry.kind == UInt8(ascii: "C") {
                changes.append(
                    LocalChange(
                        kind: entry.kind, type: entry.type, id: "", record: nil, byThisInstance: entry.sender == sender)
                )
            } else if entry.kind == UInt8(ascii: "L") {
                changes.append(LocalChange(kind: entry.kind, type: entry.type, id: entry.id, record: nil))
            } else if let found = byPosition[position] {
                changes.append(
                    LocalChange(
                        kind: found == nil ? UInt8(ascii: "D") : UInt8(ascii: "P"),
                        type: entry.type, id: entry.id, record: found))
            }
        }
        return changes
    }
}
