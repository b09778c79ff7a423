import Synchronization

/// The work reads hand the writer and do not wait for (migration write-backs, purges of expired records met):
/// how much was queued and how much is done, so that ``LocalRecordStore/metadata(_:id:key:schema:)``, the one
/// read that shows what that work changes (a record's stored version, an expired record until it is purged),
/// can wait for the work queued before it. A read itself never waits (issue 11: a read returns while the
/// writer is held up); a `metadata` right after a purging or migrating read sees the purge or the new version,
/// as API.md says of `purgeExpired` and of migrations.
final class ReadLeftovers: Sendable {
    private struct State {
        var queued: UInt64 = 0
        var finished: UInt64 = 0
        var waiters: [(until: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// Counts one piece of work handed to the writer; call ``finished()`` once it has committed or failed.
    func queued() {
        state.withLock { $0.queued += 1 }
    }

    /// Counts one piece of work as done, waking the waiters whose work is all done.
    func finished() {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.finished += 1
            let finished = state.finished
            let ready = state.waiters.filter { $0.until <= finished }.map(\.continuation)
            state.waiters.removeAll { $0.until <= finished }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once the work queued before the call is done (the writer is first in, first out): at once
    /// when there is none, the common case.
    func settled() async {
        let until = state.withLock { $0.queued }
        guard state.withLock({ $0.finished < until }) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.finished >= until { return true }
                state.waiters.append((until, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
