import Foundation
import Synchronization

@testable import LocalStorageKit

/// Keeps a store's writer busy with an exclusive job until ``release()``, so that requests queue up
/// behind it (and join one batch) or so that a test can show a call does not wait for the writer.
final class WriterHold: Sendable {
    private let started = CallCounter()
    private let gate = DispatchSemaphore(value: 0)
    private let job: Task<Void, Error>

    init(_ storage: LocalStorage) async throws {
        let started = self.started
        let gate = self.gate
        job = Task {
            try await storage.core.writer.performExclusive { _ in
                started.increment()
                gate.wait()
            }
        }
        try await waitUntil("the writer takes the hold") { started.value > 0 }
    }

    /// Lets the writer go on; waits until the held job has ended.
    func release() async throws {
        gate.signal()
        try await job.value
    }
}

/// Polls `condition` every millisecond until it holds; fails after `seconds`.
func waitUntil(_ what: String, seconds: Double = 300, _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(1))
    }
}

struct WaitTimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting until \(what)" }
}

/// Counts calls from any thread.
final class CallCounter: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

extension LocalStorage {
    /// Returns once the writer has committed everything queued before the call (work reads handed over).
    func waitForQueuedWrites() async throws {
        try await core.writer.perform { _ in }
    }
}
