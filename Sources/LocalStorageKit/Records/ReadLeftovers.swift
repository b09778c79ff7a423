import Synchronization

/// The work reads hand the writer and do not wait for (migration write-backs, purges of expired records met),
/// by record: so that ``LocalRecordStore/metadata(_:id:key:schema:)``, the one read that shows what that work
/// changes (a record's stored version, an expired record until it is purged), can wait for the work pending on
/// its own record. A read itself never waits (issue 11: a read returns while the writer is held up); a
/// `metadata` right after a purging or migrating read sees the purge or the new version, as API.md says of
/// `purgeExpired` and of migrations. A `metadata` of any other record never waits.
final class ReadLeftovers: Sendable {
    /// A record: its type's number and its key.
    struct Record: Hashable, Sendable {
        let type: UInt32
        let key: [UInt8]
    }

    private struct State {
        /// Pieces of work pending on each record.
        var pending: [Record: Int] = [:]
        var waiters: [Record: [UInt64: CheckedContinuation<Void, Never>]] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Counts one piece of work on `records` handed to the writer; call ``finished(_:)`` with the same records
    /// once it has committed or failed.
    func queued(_ records: [Record]) {
        state.withLock { state in
            for record in records { state.pending[record, default: 0] += 1 }
        }
    }

    /// Counts one piece of work on `records` as done, waking the waiters of records with none left.
    func finished(_ records: [Record]) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var ready: [CheckedContinuation<Void, Never>] = []
            for record in records {
                let left = (state.pending[record] ?? 1) - 1
                state.pending[record] = left > 0 ? left : nil
                if left <= 0, let waiting = state.waiters.removeValue(forKey: record) {
                    ready += waiting.values
                }
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// How many callers wait (tests use it to see a `metadata` waiting).
    var waiterCount: Int { state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } } }

    /// Returns once no work handed to the writer is pending on `record` (at once when none is, the common
    /// case), or when the calling task is cancelled.
    nonisolated(nonsending) func settled(_ record: Record) async {
        guard state.withLock({ $0.pending[record] != nil }) else { return }
        let token = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.pending[record] == nil || Task.isCancelled { return true }
                    state.waiters[record, default: [:]][token] = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                let continuation = state.waiters[record]?.removeValue(forKey: token)
                if state.waiters[record]?.isEmpty == true { state.waiters[record] = nil }
                return continuation
            }
            continuation?.resume()
        }
    }
}
