import Foundation

extension CommitQueue {
    /// Commits `requests` together, growing the map and replaying on `MDB_MAP_FULL`.
    ///
    /// At `maxMapSize` the batch replays with the map's reserve, which it may use only if it leaves the
    /// store no larger; otherwise each request is retried alone.
    func commit(_ requests: [((Context) throws -> Void, (Error?) -> Void)]) {
        var pending = requests
        var reserve = false
        while !pending.isEmpty {
            // The attempt's context, whose rollbacks run when it does not commit.
            var attempt: Context?
            do {
                let now = nextTimestamp()
                let context = try countedWrite(reserve: reserve) { txn in
                    let context = Context(txn: txn, now: now, environment: environment, hub: hub)
                    context.inReserve = reserve
                    attempt = context
                    context.storeMaxBytes = evictor?.book.store?.maxBytes
                    context.leases = changeLog?.leases
                    for (position, (body, _)) in pending.enumerated() {
                        do {
                            try body(context)
                        } catch let error as LMDBError where error.isMapFull {
                            throw error
                        } catch let error as LMDBError where error.code == EIO || error.isDiskFull {
                            // LMDB spilling dirty pages met the full disk: the batch's problem, not the request's.
                            let code = Environment.diskFullOr(error.code, path: environment.path)
                            throw LMDBError(code: code, call: error.call, caller: error.caller)
                        } catch {
                            throw RequestFailure(position: position, error: error)
                        }
                    }
                    try evictor?.enforce(context)
                    context.loggedSequences = try changeLog?.append(
                        context.logged, now: context.leaseNow, txn: txn, sparing: context.leasesPut)
                    return context
                }
                for hook in context.afterCommit { hook() }
                hub.publish(context.changesAfterCommit(), logged: context.loggedSequences)
                for (_, finish) in pending { finish(nil) }
                return
            } catch let failure as RequestFailure {
                // The transaction is aborted, so the failed request left nothing behind; the others
                // replay without it. Requests are closures over prepared values, or keep what their caller's
                // closure made (``performOnce(_:)``), so replaying is safe.
                attempt?.rollBack()
                pending[failure.position].1(CommitQueue.outgoing(failure.error))
                pending.remove(at: failure.position)
            } catch {
                attempt?.rollBack()
                let step: NextStep?
                do {
                    step = try nextStep(after: error, reserve: &reserve)
                } catch {
                    pending.forEach { $0.1(LocalStorageError.wrapping(error)) }
                    return
                }
                switch step {
                case .replay:
                    continue
                case .doesNotFit:
                    doesNotFit(pending)
                case .diskFull:
                    pending.forEach { $0.1(LocalStorageError.storageFull) }
                case nil:
                    let wrapped = LocalStorageError.wrapping(error)
                    logger?.log(level: .error, message: "A write batch failed", metadata: ["error": "\(wrapped)"])
                    pending.forEach { $0.1(wrapped) }
                }
                return
            }
        }
    }

    /// Commits one transaction from inside an exclusive request, growing the map on `MDB_MAP_FULL`.
    /// Changes published by `body` reach observers after the commit.
    /// At `maxMapSize` it runs once more with the map's reserve, which it may use only if it leaves the
    /// store no larger (a purge, a delete).
    func transact<R>(_ body: (Context) throws -> R) throws -> R {
        var reserve = false
        while true {
            var attempt: Context?
            do {
                let now = nextTimestamp()
                let (value, context) = try countedWrite(reserve: reserve) { txn in
                    let context = Context(txn: txn, now: now, environment: environment, hub: hub)
                    context.inReserve = reserve
                    attempt = context
                    context.storeMaxBytes = evictor?.book.store?.maxBytes
                    context.leases = changeLog?.leases
                    let value = try body(context)
                    try evictor?.enforce(context)
                    context.loggedSequences = try changeLog?.append(
                        context.logged, now: context.leaseNow, txn: txn, sparing: context.leasesPut)
                    return (value, context)
                }
                for hook in context.afterCommit { hook() }
                hub.publish(context.changesAfterCommit(), logged: context.loggedSequences)
                return value
            } catch {
                attempt?.rollBack()
                switch try nextStep(after: error, reserve: &reserve) {
                case .replay:
                    continue
                case .doesNotFit:
                    logDoesNotFit()
                    throw LocalStorageError.storageFull
                case .diskFull:
                    throw LocalStorageError.storageFull
                case nil:
                    throw error
                }
            }
        }
    }

    /// Commits requests that run a caller's closure: each in a transaction nested in one parent, so one
    /// that throws is aborted alone and the others commit together, each closure having run once.
    ///
    /// A request whose own writes met `MDB_MAP_FULL` is aborted alone too; after the others commit, the
    /// map grows and that request runs again (or fails with `storageFull` at the size limit). At
    /// `maxMapSize` it runs with the map's reserve (`reserve`), where a request that leaves the store larger
    /// fails with `storageFull`.
    func commitOnce(
        _ requests: [((Context) throws -> Void, (Error?) -> Void)], reserve: Bool = false, mapGrew: Bool = false
    ) {
        enum Outcome {
            case done
            case failed(any Error)
            case needsRoom
        }
        if !reserve, growsAheadOfClosures.load(ordering: .relaxed), keepHeadroomForClosures(), requests.count > 1 {
            // At `maxMapSize` with little room left, each request commits alone, after the pages the one before
            // freed were made reusable: in one group, a body meeting the end of the map beside a peer that frees
            // room (a delete) would fail, since it does not run again there (review-84 #1, #3).
            for request in requests { commitOnce([request], mapGrew: mapGrew) }
            return
        }
        let now = nextTimestamp()
        let outcomes: [Outcome]
        // What each request's nested transaction came to, kept should the parent fail after them.
        var ran: [Outcome] = []
        var attempt: Context?
        do {
            let (context, results) = try countedWrite(reserve: reserve) { txn -> (Context, [Outcome]) in
                let context = Context(txn: txn, now: now, environment: environment, hub: hub)
                context.inReserve = reserve
                attempt = context
                context.storeMaxBytes = evictor?.book.store?.maxBytes
                context.mapGrewForReplay = mapGrew

                context.leases = changeLog?.leases
                var results: [Outcome] = []
                results.reserveCapacity(requests.count)
                for (body, _) in requests {
                    let child = context.nested(try txn.beginNested())
                    do {
                        let before = reserve ? try StoreTotals.of(child.txn, logger: logger) : nil
                        try body(child)
                        if let before, before.grew(to: try StoreTotals.of(child.txn, logger: logger)) {
                            child.abortNested()
                            results.append(.failed(LocalStorageError.storageFull))
                            continue
                        }
                        if child.metMapFull {
                            // The closure caught the full map and went on: its writes are incomplete.
                            child.abortNested()
                            results.append(.needsRoom)
                            continue
                        }
                        if let error = child.storeError {
                            // The closure caught another error of the store and went on: LMDB may have marked the
                            // transaction failed, and committing it would fail the parent, every peer with it.
                            child.abortNested()
                            results.append(.failed(error))
                            continue
                        }
                    } catch let error as LMDBError where error.isMapFull {
                        child.abortNested()
                        results.append(.needsRoom)
                        continue
                    } catch {
                        child.abortNested()
                        results.append(child.metMapFull ? .needsRoom : .failed(error))
                        continue
                    }
                    do {
                        try child.txn.commitNested()
                    } catch {
                        // A failed commit has ended the child (LMDB aborts it): it must not be aborted again.
                        child.rollBack()
                        results.append(.failed(error))
                        continue
                    }
                    context.absorb(child)
                    results.append(.done)
                }
                ran = results
                try evictor?.enforce(context)
                context.loggedSequences = try changeLog?.append(
                    context.logged, now: context.leaseNow, txn: txn, sparing: context.leasesPut)
                return (context, results)
            }
            for hook in context.afterCommit { hook() }
            hub.publish(context.changesAfterCommit(), logged: context.loggedSequences)
            outcomes = results
        } catch let error as LMDBError where error.isMapFull {
            attempt?.rollBack()
            // The parent's own pages (the eviction, the change log, the free list its commit saves) met the
            // end of the map: nothing of it was written. That is the batch's writes needing the map to grow,
            // the one case where a closure runs again (its nested transaction is gone with the parent; an
            // update reuses what its `mutate` made). A request whose own transaction already failed (its closure
            // threw) fails with its error and does not run again.
            var replay: [((Context) throws -> Void, (Error?) -> Void)] = []
            for (position, request) in requests.enumerated() {
                if position < ran.count, case .failed(let error) = ran[position] {
                    request.1(CommitQueue.outgoing(error))
                } else {
                    replay.append(request)
                }
            }
            commitOnceInMoreRoom(replay, reserve: reserve)
            return
        } catch {
            attempt?.rollBack()
            // The parent itself failed otherwise (its commit met a full disk): nothing of it was written.
            // Closures that ran must not run again; they fail with the store's error, but for one that threw
            // already, whose own error comes out unchanged (review-84 #10).
            let wrapped = LocalStorageError.wrapping(error)
            logger?.log(
                level: .error, message: "A batch of transactions failed to commit",
                metadata: ["error": "\(wrapped)"])
            for (position, request) in requests.enumerated() {
                if position < ran.count, case .failed(let own) = ran[position] {
                    request.1(CommitQueue.outgoing(own))
                } else {
                    request.1(wrapped)
                }
            }
            return
        }
        var retry: [((Context) throws -> Void, (Error?) -> Void)] = []
        for (request, outcome) in zip(requests, outcomes) {
            switch outcome {
            case .done: request.1(nil)
            case .failed(let error): request.1(CommitQueue.outgoing(error))
            case .needsRoom: retry.append(request)
            }
        }
        commitOnceInMoreRoom(retry, reserve: reserve)
    }

    /// Grows the map before a batch of closure requests when less than ``closureHeadroom`` of it (at least
    /// 1 MiB) lies past the data file's last page: a closure runs once, and a map that must grow under it makes
    /// it run again. Only a batch whose writes need more than that room still does. At `maxMapSize` it makes the
    /// pages the last commit freed reusable instead (``reclaimFreedPages(threshold:inReserve:)``) and returns true: the map is at its
    /// limit with little room left. A failure here is left to the commit, which grows the map itself.
    private func keepHeadroomForClosures() -> Bool {
        do {
            let pageSize = try pageSize()
            for _ in 0..<4 {
                let info = environment.info()
                // The map a closure runs in: a commit in the reserve left it larger, and the next shrinks it back.
                let mapSize = min(info.mapSize, Environment.rounded(environment.maxMapSize))
                let headroom = mapSize - (info.lastPage + 1) * pageSize
                guard headroom < max(1 << 20, mapSize / CommitQueue.closureHeadroom) else { return false }
                guard try environment.growMap() else {
                    // At `maxMapSize`: pages the last commit freed (a store just emptied) are made reusable
                    // first, so that a `write` body, which is not run again there, finds them.
                    _ = try reclaimFreedPages()
                    return true
                }
            }
        } catch {
            logger?.log(
                level: .warning, message: "Could not grow the map ahead of a batch", metadata: ["error": "\(error)"])
        }
        return false
    }

    /// The share of the map (one in this many) kept free past the data file's last page before a batch of
    /// closure requests runs.
    static let closureHeadroom = 8

    /// Grows the map (or takes its reserve) and commits `requests` again with ``commitOnce(_:reserve:mapGrew:)``; they
    /// fail with `storageFull` when there is no more room.
    private func commitOnceInMoreRoom(_ requests: [((Context) throws -> Void, (Error?) -> Void)], reserve: Bool) {
        guard !requests.isEmpty else { return }
        var reserve = reserve
        var grew = false
        do {
            if try makeRoom(reserve: &reserve, grew: &grew) {
                commitOnce(requests, reserve: reserve, mapGrew: grew)
                return
            }
            logDoesNotFit()
            requests.forEach { $0.1(LocalStorageError.storageFull) }
        } catch {
            requests.forEach { $0.1(LocalStorageError.wrapping(error)) }
        }
    }

    /// Fails requests that do not fit in `maxMapSize`: each alone when there are several, so that only the
    /// ones that do not fit fail with `storageFull`.
    private func doesNotFit(_ pending: [((Context) throws -> Void, (Error?) -> Void)]) {
        if pending.count > 1 {
            for request in pending { commit([request]) }
        } else {
            logDoesNotFit()
            pending.forEach { $0.1(LocalStorageError.storageFull) }
        }
    }
}
