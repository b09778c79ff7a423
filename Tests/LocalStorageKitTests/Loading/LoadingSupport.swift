import Foundation
import Synchronization

@_spi(Testing) @testable import LocalStorageKit

/// Counts the loads a test's loader runs, and holds them at a gate until the test opens it.
final class LoadGate: Sendable {
    private struct State {
        var loads = 0
        var isOpen = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    init(open: Bool = false) { state.withLock { $0.isOpen = open } }

    /// How many loads ran.
    var loads: Int { state.withLock { $0.loads } }

    /// Counts a load, then suspends until the gate opens.
    func pass() async {
        state.withLock { $0.loads += 1 }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                if state.isOpen { return true }
                state.waiting.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }

    /// Returns once at least one load has started; throws after `timeout` (a caller that failed before its
    /// load, say on a shared tier that did not answer in time on a loaded machine, must fail the test, not
    /// hang it).
    func waitForLoad(timeout: Duration = .seconds(300)) async throws {
        try await eventually("a load to start", timeout: timeout) { loads > 0 }
    }

    /// Lets every held load and every later one through.
    func open() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}

/// An error a test's loader throws.
struct CatalogError: Error, Equatable {
    let code: Int
}

/// Waits (yielding, with a generous deadline as a safety net) until `condition` holds.
func eventually(_ what: String, timeout: Duration = .seconds(300), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw LoadTestError.timedOut(what) }
        try await Task.sleep(for: .milliseconds(1))
    }
}

enum LoadTestError: Error {
    case timedOut(String)
}

/// A record with an integer id, for the typed-id overloads.
struct Ticket: LocalStorable, Equatable {
    let id: Int
    var title: String
}
