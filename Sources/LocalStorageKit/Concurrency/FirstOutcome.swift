import Synchronization

/// The first of several outcomes offered from different tasks, handed to the one task that waits for it; later
/// offers are dropped.
final class FirstOutcome<Value: Sendable>: Sendable {
    private struct State {
        var offered: Value?
        var isDecided = false
        var waiter: CheckedContinuation<Value, Never>?
    }

    private let state = Mutex(State())

    init() {}

    /// Offers `value`; it is the outcome unless another came first.
    func offer(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard !state.isDecided else { return nil }
            state.isDecided = true
            guard let waiter = state.waiter.take() else {
                state.offered = value
                return nil
            }
            return waiter
        }
        waiter?.resume(returning: value)
    }

    /// The first value offered, once there is one. Call it from one task only.
    func value() async -> Value {
        await withCheckedContinuation { continuation in
            let offered = state.withLock { state -> Value? in
                guard let offered = state.offered else {
                    state.waiter = continuation
                    return nil
                }
                return offered
            }
            if let offered { continuation.resume(returning: offered) }
        }
    }
}
