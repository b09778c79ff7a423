extension CommitQueue {
    /// What a write transaction that failed for want of room does next (``nextStep(after:reserve:)``).
    enum NextStep {
        /// The map grew, or the write may now use the map's reserve: run it again.
        case replay
        /// The map is at `maxMapSize` and the reserve did not help: the write does not fit (`storageFull`).
        case doesNotFit
        /// The disk holding the store is full (logged): the write fails with `storageFull`.
        case diskFull
    }

    /// The one answer to a write that met a full map or a full disk, shared by the batch commit
    /// (``commit(_:)``), an exclusive request's transactions (``transact(_:)``) and the retry of closures
    /// whose writes met a full map (``commitOnce(_:reserve:mapGrew:)``).
    ///
    /// `MDB_MAP_FULL` makes room (``makeRoom(reserve:)``) and replays, or does not fit once the reserve is in
    /// use; ``ReserveRefused`` (a write that would leave the store larger while using the reserve) does not
    /// fit; a full disk is logged. Nil for any other error, which is the caller's to report.
    ///
    /// - Throws: What growing the map throws.
    func nextStep(after error: any Error, reserve: inout Bool) throws -> NextStep? {
        switch error {
        case let error as LMDBError where error.isMapFull:
            return try makeRoom(reserve: &reserve) ? .replay : .doesNotFit
        case is ReserveRefused:
            return .doesNotFit
        case let error as LMDBError where error.isDiskFull:
            logger?.log(
                level: .error, message: "A write failed: the disk holding the store is full",
                metadata: ["path": environment.path, "error": error.description])
            return .diskFull
        default:
            return nil
        }
    }

    /// Makes room after `MDB_MAP_FULL`, while no transaction of this process is open: grows the map toward
    /// `maxMapSize` (toward the reserve's end when `reserve` is set); at `maxMapSize` lets the next run use
    /// the map's reserve (`reserve` becomes true), which it may only if it leaves the store no larger (deletes,
    /// purges, evictions). False when the reserve was in use already: the write does not fit.
    ///
    /// - Throws: What `mdb_env_set_mapsize` throws.
    func makeRoom(reserve: inout Bool) throws -> Bool {
        var grew = false
        return try makeRoom(reserve: &reserve, grew: &grew)
    }

    /// ``makeRoom(reserve:)``, telling in `grew` whether the map grew below `maxMapSize` (not into the reserve,
    /// not by reclaiming freed pages): the one case where a `write { }` body runs again (``WriteBodyRun``).
    func makeRoom(reserve: inout Bool, grew: inout Bool) throws -> Bool {
        grew = false
        if try environment.growMap(intoReserve: reserve) {
            grew = !reserve
            logger?.log(
                level: .info, message: "Grew the memory map", metadata: ["bytes": "\(environment.currentMapSize)"])
            return true
        }
        guard !reserve else { return false }
        if try reclaimFreedPages() { return true }
        reserve = true
        _ = try environment.growMap(intoReserve: true)
        return true
    }

    /// Commits one small write (a counter in `meta`) when the last commit freed at least `threshold` pages, so
    /// that the next commit can reuse them: LMDB keeps a commit's freed pages for the snapshot before it until
    /// one more commit. Right after a store was emptied at `maxMapSize` a write would otherwise not fit
    /// (`inReserve`: the small commit may then use the map's reserve for its few pages when no older page is
    /// free), and after every large commit the next one would otherwise take new pages at the end of the file
    /// for what it rewrites, so that a store saved in batches ends one batch's rewritten pages larger
    /// (``reclaimBeforeWork()``). The small commit frees fewer pages than ``reclaimThreshold`` itself,
    /// so it never makes a second one follow (in this process or another) without a real write in between.
    /// False when there was nothing to reclaim.
    ///
    /// - Throws: What the reads and the commit throw.
    func reclaimFreedPages(threshold: Int = CommitQueue.reclaimThreshold, inReserve: Bool = true) throws -> Bool {
        let last = environment.lastTransactionID
        let freedByLast = try environment.read { txn in try txn.pagesFreed(byTransaction: last) }
        guard freedByLast >= threshold else { return false }
        if inReserve { _ = try environment.growMap(intoReserve: true) }
        // Counted, so that `commitCount` stays the number of this writer's commits.
        try countedWrite(reserve: inReserve) { txn in
            guard let meta = try txn.openDatabase(TypeRegistry.metaName, create: false) else { return }
            try withUnsafeBytes(of: UInt64(last).littleEndian) {
                try txn.put(meta, key: CommitQueue.reclaimKey, value: Array($0))
            }
        }
        logger?.log(
            level: inReserve ? .info : .debug,
            message: "Committed once so that the pages the last commit freed can be reused",
            metadata: ["pages": "\(freedByLast)"])
        return true
    }

    /// Before each piece of work (a batch, an exclusive request), when the last commit is still the one that ended
    /// the writer's previous piece of work, makes the pages that commit freed reusable by this work's commits
    /// (``reclaimFreedPages(threshold:inReserve:)``) when they are at least ``largeCommitBytes``; asking costs a
    /// seek in LMDB's free list. Before the next work rather than right after the large commit: the large commit's
    /// callers do not wait for a second write transaction, which must take LMDB's lock across processes and so
    /// could wait for another process's whole write (an import, a stopped process), and when another process
    /// committed in between, its commit already made the pages reusable and nothing is committed. Not between the
    /// batches of an exclusive request (a purge, a re-index, a migration): there each commit reuses the pages of the
    /// one two before, so the request's file grows by one batch's rewrite once, where a small commit per batch
    /// would add LMDB's two syncs to each on a durable store. An optimization of the file's size only: a failure
    /// is logged, not thrown; a full map grows first, and a map at `maxMapSize` without room for the small commit
    /// is left to the work, which reclaims in the map's reserve when it needs the pages
    /// (``makeRoom(reserve:grew:)``).
    func reclaimBeforeWork() {
        guard let previous = lastCommitOfWork else { return }
        lastCommitOfWork = nil
        guard reclaimsAfterLargeCommits, !environment.isReadOnly, environment.lastTransactionID == previous else {
            return
        }
        do {
            let pages = max(CommitQueue.reclaimThreshold, CommitQueue.largeCommitBytes / (try pageSize()))
            do {
                _ = try reclaimFreedPages(threshold: pages, inReserve: false)
            } catch let error as LMDBError where error.isMapFull {
                guard try environment.growMap() else { throw error }
                logger?.log(
                    level: .info, message: "Grew the memory map",
                    metadata: ["bytes": "\(environment.currentMapSize)"])
                _ = try reclaimFreedPages(threshold: pages, inReserve: false)
            }
        } catch let error as LMDBError where error.isMapFull {
            logger?.log(
                level: .debug, message: "No room at maxMapSize to make the pages a large commit freed reusable now",
                metadata: ["error": "\(error)"])
        } catch {
            logger?.log(
                level: .warning, message: "Could not make the pages a large commit freed reusable",
                metadata: ["error": "\(LocalStorageError.wrapping(error))"])
        }
    }

    /// The environment's page size, read once (it never changes).
    ///
    /// - Throws: What `mdb_env_stat` throws.
    func pageSize() throws -> Int {
        var pageSize = knownPageSize.load(ordering: .relaxed)
        if pageSize == 0 {
            pageSize = try environment.mainStatistics().pageSize
            knownPageSize.store(pageSize, ordering: .relaxed)
        }
        return pageSize
    }

    /// How many pages the last commit must have freed for ``reclaimFreedPages(threshold:inReserve:)`` to commit: more
    /// than the few its own commit frees.
    static let reclaimThreshold = 64

    /// How many bytes of pages a commit must have freed for ``reclaimBeforeWork()`` to commit once more: a
    /// commit that rewrote that much costs more than the small one, durable or not.
    static let largeCommitBytes = 1 << 20

    /// Where ``reclaimFreedPages(threshold:inReserve:)`` writes in `meta`.
    static let reclaimKey = Array("store.reclaim".utf8)

    /// Logs a write that does not fit in `maxMapSize`.
    func logDoesNotFit() {
        logger?.log(
            level: .error, message: "A write does not fit: the store's map reached maxMapSize",
            metadata: ["path": environment.path, "maxMapSize": "\(environment.maxMapSize)"])
    }
}
