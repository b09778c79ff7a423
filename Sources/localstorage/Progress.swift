import Foundation
@_spi(Maintenance) import LocalStorageKit
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows the progress of long work on standard error: a bar redrawn in place when standard error is a
/// terminal, otherwise a plain line every few seconds (so logs stay readable).
final class ProgressDisplay: Sendable {
    private struct State {
        var lastDraw: ContinuousClock.Instant?
        var hasDrawnBar = false
    }

    private let isTerminal: Bool
    private let interval: Duration
    private let started = ContinuousClock.now
    private let state = Mutex(State())

    /// A display for the current process's standard error.
    init() {
        isTerminal = isatty(STDERR_FILENO) != 0
        interval = isTerminal ? .milliseconds(100) : .seconds(2)
    }

    /// The handler to give to long operations.
    var handler: MaintenanceProgressHandler {
        { [self] progress in self.show(progress) }
    }

    private func show(_ progress: MaintenanceProgress) {
        let now = ContinuousClock.now
        let text: String? = state.withLock { state in
            // Nothing for the first second: quick work stays quiet.
            guard now - started >= .seconds(1) else { return nil }
            if let last = state.lastDraw, now - last < interval { return nil }
            state.lastDraw = now
            state.hasDrawnBar = isTerminal
            return isTerminal ? "\r\u{1B}[K" + bar(progress) : line(progress) + "\n"
        }
        if let text { Output.emit(text, to: STDERR_FILENO) }
    }

    /// Clears the bar, if one is shown.
    func finish() {
        let hasBar = state.withLock { state in
            defer { state.hasDrawnBar = false }
            return state.hasDrawnBar
        }
        if hasBar { Output.emit("\r\u{1B}[K", to: STDERR_FILENO) }
    }

    private func bar(_ progress: MaintenanceProgress) -> String {
        guard let total = progress.total, total > 0 else { return "\(progress.task) \(progress.completed)…" }
        let fraction = max(0, min(1, Double(progress.completed) / Double(total)))
        let width = 30
        let filled = Int(fraction * Double(width))
        let percent = Int(fraction * 100)
        return "\(progress.task) [" + String(repeating: "#", count: filled)
            + String(repeating: "-", count: width - filled) + "] \(percent)% \(progress.completed)/\(total)"
    }

    private func line(_ progress: MaintenanceProgress) -> String {
        guard let total = progress.total, total > 0 else { return "\(progress.task): \(progress.completed)" }
        let percent = Int(min(1, Double(progress.completed) / Double(total)) * 100)
        return "\(progress.task): \(progress.completed)/\(total) (\(percent)%)"
    }
}
