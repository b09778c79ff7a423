import Foundation

/// A task executor with a thread of its own, for a test that must block a thread (a synchronous body that
/// waits for other work) without holding one of the cooperative pool's few threads, or that must make
/// progress while other tests hold them.
///
/// ```swift
/// let executor = ThreadExecutor(name: "reader")
/// defer { executor.stop() }
/// let value = try await Task(executorPreference: executor) { try await storage.read { … } }.value
/// ```
///
/// Made with `runsActor: true`, it is an actor's serial executor instead (`unownedExecutor`), so that the
/// thread tells whether code ran isolated to that actor.
final class ThreadExecutor: TaskExecutor, SerialExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var isStopping = false
    private var enqueued = 0
    private let runsActor: Bool

    /// How many jobs were handed to this executor so far (a hop onto it is one).
    var enqueuedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return enqueued
    }

    init(name: String, runsActor: Bool = false) {
        self.runsActor = runsActor
        let thread = Thread { [self] in run() }
        thread.name = "LocalStorageKitTests.\(name)"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        enqueued += 1
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Ends the thread once the jobs queued so far have run.
    func stop() {
        condition.lock()
        isStopping = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !isStopping { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            if runsActor {
                job.runSynchronously(on: asUnownedSerialExecutor())
            } else {
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
    }
}
