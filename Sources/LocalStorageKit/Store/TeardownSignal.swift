import Dispatch

/// A one-time signal that a ``StoreCore`` has finished its teardown (environment closed, writer stopped),
/// which any number of waiters may wait for.
final class TeardownSignal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    /// Says the teardown is over. Called once, at the end of the core's `deinit`.
    func finished() { semaphore.signal() }

    /// Whether the teardown is over, without waiting.
    var isFinished: Bool { wait(upTo: .zero) }

    /// Blocks until the teardown is over, or `limit` has passed; returns whether it is over.
    @discardableResult
    func wait(upTo limit: Duration) -> Bool {
        guard semaphore.wait(timeout: .now() + .nanoseconds(Int(limit.nanoseconds))) == .success else { return false }
        semaphore.signal()  // for the next waiter
        return true
    }
}
