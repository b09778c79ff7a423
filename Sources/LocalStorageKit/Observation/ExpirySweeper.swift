/// Purges expired records in the background while the store is open.
///
/// Every `interval` it hands the writer one batch of at most ``batchSize`` expired records (across all
/// types) at a time, each batch its own transaction, so that saves queued meanwhile are committed
/// between batches instead of waiting for the whole sweep. Each purged record is published as
/// ``StorageChange/expired(id:)``. Each time, first, the read transactions the store pooled and no read took since
/// give their reader slots back; with no `interval` that alone runs, on a timer of real time. The sweeper holds the
/// writer weakly: it never keeps the store open, and ``stop()`` (called when the store closes) ends it.
final class ExpirySweeper: Sendable {
    /// The most records one sweep transaction deletes.
    static let batchSize = 1_000

    private let task: Task<Void, Never>

    /// Starts sweeping every `interval` of `clock`'s time. When `interval` is nil it sweeps nothing, and only gives
    /// back the idle read pool's reader slots every `idleReads.interval` of `idleReads.clock` (real time; review-108
    /// R10: a process that stopped reading kept them, and with many such processes the table of 512 filled).
    init(
        writer: CommitQueue, meta: Database, interval: Duration?,
        idleReads: (interval: Duration, clock: any StorageClock), logger: (any StorageLogger)?,
        clock: any StorageClock
    ) {
        let sweeps = interval != nil
        let (period, timer) = interval.map { (max($0, .milliseconds(1)), clock) } ?? idleReads
        task = Task.detached(priority: .background) { [weak writer] in
            while true {
                do {
                    try await timer.sleep(for: period)
                } catch {
                    return  // Cancelled: the store closed.
                }
                guard let writer else { return }
                // A process that stopped reading gives back the reader slots its pool kept (review-107 B1).
                writer.environment.giveBackIdleReads()
                guard sweeps else { continue }
                do {
                    let purged = try await ExpirySweeper.sweep(
                        writer: writer, meta: meta,
                        batchSize: ExpirySweeper.batchSize)
                    if purged > 0 {
                        logger?.log(level: .debug, message: "Swept expired records", metadata: ["count": "\(purged)"])
                    }
                } catch {
                    if Task.isCancelled { return }
                    logger?.log(level: .error, message: "The expiry sweep failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    /// Ends the sweep; a batch already queued still completes.
    func stop() { task.cancel() }

    /// Purges every expired record now, in batches of `batchSize`, and the entries of loads that ended; returns
    /// how many records it purged.
    static func sweep(writer: CommitQueue, meta: Database, batchSize: Int) async throws -> Int {
        var total = 0
        var removingEndedLeases = true
        var size = PartSize(largest: batchSize)
        while !Task.isCancelled {
            let removing = removingEndedLeases
            let limit = size.current
            let batch: (purged: Int, examined: Int, moreEndedLeases: Bool)
            do {
                batch = try await writer.performExclusive { writer in
                    try RecordWriter.purgeExpiredBatch(
                        meta: meta, writer: writer, limit: limit, removingEndedLeases: removing)
                }
            } catch LocalStorageError.storageFull where size.shrink() {
                continue
            }
            size.grow()
            removingEndedLeases = batch.moreEndedLeases
            total += batch.purged
            if batch.examined < limit && !batch.moreEndedLeases { break }
        }
        return total
    }
}
