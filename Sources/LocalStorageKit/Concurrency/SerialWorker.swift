import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

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
    /// The body of a thread not made yet: ``start(take:run:leftOver:atEnd:)`` makes it at the first job.
    private var deferredBody: (@Sendable () -> Void)?
    /// What ``stop(then:)`` called on the worker's own thread leaves for the thread's very end.
    private var afterEnd: (@Sendable () -> Void)?
    private let finished = DispatchSemaphore(value: 0)
    private let name: String

    /// A worker whose thread will bear `name`; it starts with ``start(take:run:leftOver:atEnd:)`` or
    /// ``start(_:)``.
    init(name: String) {
        self.name = name
    }

    /// Prepares the thread that runs queued jobs: `take` picks the next ones from the queue (never empty) under
    /// the lock, `run` runs them outside it. When the worker stops, the jobs still queued run first, or, when
    /// `leftOver` is given, it gets them instead; `atEnd` runs last on the thread.
    ///
    /// The thread is made when the first job is queued (at once if jobs are queued already): a store opened only to be read never makes its
    /// writer's thread (making one and ending it took about a tenth of opening a store and reading a record).
    /// A worker stopped before any job runs `atEnd` on the thread that stops it.
    func start(
        take: @escaping @Sendable (inout [Job]) -> [Job], run: @escaping @Sendable ([Job]) -> Void,
        leftOver: (@Sendable ([Job]) -> Void)? = nil, atEnd: (@Sendable () -> Void)? = nil
    ) {
        let body: @Sendable () -> Void = { [self] in
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
        condition.lock()
        // Jobs queued before the start get the thread now; otherwise the first `submit` makes it.
        let thread = queue.isEmpty ? nil : makeThread(body)
        if thread == nil { deferredBody = body }
        condition.unlock()
        thread?.start()
    }

    /// Starts the thread with `body`, for an owner that takes no jobs and loops on its own until
    /// ``isStopping``.
    func start(_ body: @escaping @Sendable () -> Void) {
        condition.lock()
        let thread = makeThread(body)
        condition.unlock()
        thread.start()
    }

    /// A thread that runs `body`, recorded as the worker's; called under the lock, started by the caller.
    private func makeThread(_ body: @escaping @Sendable () -> Void) -> Thread {
        let finished = self.finished
        let systemName = SerialWorker.systemName(name)
        let thread = Thread { [self] in
            SerialWorker.nameCurrentThread(systemName)
            body()
            locked { afterEnd }?()
            finished.signal()
        }
        thread.name = name
        self.thread = thread
        return thread
    }

    /// The name the system shows for a worker's thread (debuggers, `top -H`, `perf`): Linux keeps at most 15
    /// bytes, so `LocalStorageKit.writer` is shown as `lsk.writer` (the part after the last dot).
    static func systemName(_ name: String) -> String {
        let last = name.split(separator: ".").last.map(String.init) ?? name
        var shown = ""
        for character in "lsk." + last where shown.utf8.count + String(character).utf8.count <= 15 {
            shown.append(character)
        }
        return shown
    }

    /// Gives the calling thread `name` where the system shows it (`Thread.name` does not reach it on Linux):
    /// written to `/proc/thread-self/comm`, as `pthread_setname_np` does. Best effort: a thread without its name
    /// works the same.
    private static func nameCurrentThread(_ name: String) {
        #if os(Linux)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = Array(name.utf8).withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        #endif
    }

    /// Queues `job` and wakes the thread; false when the worker is stopping (the caller fails the job).
    func submit(_ job: Job) -> Bool {
        condition.lock()
        guard !stopping else {
            condition.unlock()
            return false
        }
        queue.append(job)
        let deferred = deferredBody.map(makeThread)
        deferredBody = nil
        condition.broadcast()
        condition.unlock()
        deferred?.start()
        return true
    }

    /// The number of jobs queued and not taken yet.
    var queuedCount: Int { locked { queue.count } }

    /// Whether ``stop(then:)`` was called.
    var isStopping: Bool { locked { stopping } }

    /// Ends the thread (see the type's description) and waits for it, then runs `last`; called on the thread
    /// itself, it does not wait, and `last` runs when the thread has taken its last job. Later calls only run
    /// `last`.
    func stop(then last: (@Sendable () -> Void)? = nil) {
        condition.lock()
        if stopping {
            condition.unlock()
            last?()
            return
        }
        stopping = true
        let onOwnThread = thread.map { $0 == Thread.current } ?? false
        let mustWait = thread != nil && !onOwnThread
        // Called by a job (the owner's last reference went with it): the thread still drains what is queued,
        // so `last` (closing what those jobs use) waits for the thread's end.
        if onOwnThread { afterEnd = last }
        thread = nil
        let neverStarted = deferredBody
        deferredBody = nil
        condition.broadcast()
        condition.unlock()
        // No job ever came: the body finds the worker stopping with nothing queued, runs `atEnd` and returns.
        neverStarted?()
        if mustWait { finished.wait() }
        if !onOwnThread { last?() }
    }

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
