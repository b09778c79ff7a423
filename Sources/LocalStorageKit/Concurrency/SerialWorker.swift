import Dispatch
import Foundation

/// One thread that runs its owner's work in order: the writer (group commits), the shared tier's command
/// connection (pipelines) and its subscriber each run on one.
///
/// Jobs queue under one lock; the thread takes what the owner's `take` picks from the queue (a group commit,
/// a pipeline) and runs it outside the lock. ``stop()`` ends the thread, after running the jobs still queued
/// or handing them back unrun (`leftOver`), and waits for it unless called on the thread itself. An owner may
/// keep state of its own under the worker's lock (``locked(_:)``), wait on it from the thread
/// (``wait(until:)``) and wake such waits (``signal()``); stopping wakes them too.
final class SerialWorker<Job>: @unchecked Sendable {
    // @unchecked: `queue`, `stopping` and `thread` are only touched under `condition`; the closures the
    // thread runs are held by the thread alone, so an owner they capture is released when it ends.
    private let condition = NSCondition()
    private var queue: [Job] = []
    private var stopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    private let name: String

    /// A worker whose thread will bear `name`; it starts with ``start(take:run:leftOver:atEnd:)`` or
    /// ``start(_:)``.
    init(name: String) {
        self.name = name
    }

    /// Starts the thread that runs queued jobs: `take` picks the next ones from the queue (never empty) under
    /// the lock, `run` runs them outside it. When the worker stops, the jobs still queued run first, or, when
    /// `leftOver` is given, it gets them instead; `atEnd` runs last on the thread.
    func start(
        take: @escaping @Sendable (inout [Job]) -> [Job], run: @escaping @Sendable ([Job]) -> Void,
        leftOver: (@Sendable ([Job]) -> Void)? = nil, atEnd: (@Sendable () -> Void)? = nil
    ) {
        start { [self] in
            while true {
                condition.lock()
                while queue.isEmpty && !stopping { condition.wait() }
                if stopping && (queue.isEmpty || leftOver != nil) {
                    let left = queue
                    queue = []
                    condition.unlock()
                    if !left.isEmpty { leftOver?(left) }
                    break
                }
                let jobs = take(&queue)
                condition.unlock()
                run(jobs)
            }
            atEnd?()
        }
    }

    /// Starts the thread with `body`, for an owner that takes no jobs and loops on its own until
    /// ``isStopping``.
    func start(_ body: @escaping @Sendable () -> Void) {
        let finished = self.finished
        let thread = Thread {
            body()
            finished.signal()
        }
        thread.name = name
        condition.lock()
        self.thread = thread
        condition.unlock()
        thread.start()
    }

    /// Queues `job` and wakes the thread; false when the worker is stopping (the caller fails the job).
    func submit(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return false }
        queue.append(job)
        condition.broadcast()
        return true
    }

    /// The number of jobs queued and not taken yet.
    var queuedCount: Int { locked { queue.count } }

    /// Whether ``stop()`` was called.
    var isStopping: Bool { locked { stopping } }

    /// Ends the thread (see the type's description) and waits for it, unless called on the thread itself (it
    /// then ends when the current job returns). Later calls do nothing.
    func stop() {
        condition.lock()
        if stopping {
            condition.unlock()
            return
        }
        stopping = true
        let mustWait = thread.map { $0 != Thread.current } ?? false
        thread = nil
        condition.broadcast()
        condition.unlock()
        if mustWait { finished.wait() }
    }

    /// Runs `body` under the worker's lock, for the owner's state that its thread waits on.
    func locked<R>(_ body: () throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    /// Wakes the waits of ``wait(until:)`` to look at the owner's state again (after a change made in
    /// ``locked(_:)``).
    func signal() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits, under the lock, until `ready` (evaluated under the lock, where it may also update the owner's
    /// state) holds or the worker stops; false when it stops.
    func wait(until ready: () -> Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !stopping {
            if ready() { return true }
            condition.wait()
        }
        return false
    }
}
