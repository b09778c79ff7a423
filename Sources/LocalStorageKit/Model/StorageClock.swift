import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one source of time for everything the library reads or waits on: expiry, the sweeper,
/// coalescing windows, reconnect backoff, lease deadlines, change-log trimming.
///
/// A store takes its clock from ``LocalStorageConfiguration/clock`` (the system's by default); tests
/// give it a ``VirtualClock`` and advance time by hand, so no test waits for time to pass.
@_spi(Testing) public protocol StorageClock: Sendable {
    /// Wall-clock time in nanoseconds since 1970, the unit of every timestamp on disk.
    func wallNanoseconds() -> Int64
    /// Monotonic time since an arbitrary origin, for deadlines, windows and backoff.
    func uptime() -> Duration
    /// Nanoseconds since the host booted, the same in every process of the host and unmoved when the wall clock is
    /// stepped (`CLOCK_BOOTTIME` on Linux): the deadlines of leases whose holder runs on this host.
    func bootNanoseconds() -> Int64
    /// Suspends until ``uptime()`` reaches `deadline`; throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Duration) async throws
    /// Suspends until ``wallNanoseconds()`` reaches `wallDeadline` (for expiry: a record expires at a wall
    /// time); throws `CancellationError` when the task is cancelled.
    func sleep(untilWallNanoseconds wallDeadline: Int64) async throws
}

extension StorageClock {
    /// Suspends for `duration` of this clock's time.
    func sleep(for duration: Duration) async throws {
        try await sleep(until: uptime() + duration)
    }

    /// Sleeps on the monotonic clock for as long as wall time needs to reach `wallDeadline` now.
    func sleep(untilWallNanoseconds wallDeadline: Int64) async throws {
        try await sleep(for: .nanoseconds(max(0, wallDeadline &- wallNanoseconds())))
    }

    /// Now as a date.
    func date() -> Date { EpochNanoseconds.date(fromNanoseconds: wallNanoseconds()) }
}

/// The system's clocks: `CLOCK_REALTIME` for timestamps, `ContinuousClock` for waiting.
struct SystemClock: StorageClock {
    private static let origin = ContinuousClock.now
    /// The longest wait: a century (as ``LoadPolicy``'s longest duration).
    static let longestSleep = Duration.seconds(100 * 365 * 86_400)

    func wallNanoseconds() -> Int64 { EpochNanoseconds.now() }

    func uptime() -> Duration { ContinuousClock.now - SystemClock.origin }

    func bootNanoseconds() -> Int64 { SystemClock.bootNanoseconds() }

    static func bootNanoseconds() -> Int64 {
        var time = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_BOOTTIME, &time)
        #else
        clock_gettime(CLOCK_MONOTONIC, &time)
        #endif
        return Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
    }

    /// `Task.sleep` traps on an instant it cannot express (past 2⁶³ seconds), which a configured interval of
    /// `.seconds(Int64.max)` reaches: a deadline further away than a century waits a century.
    func sleep(until deadline: Duration) async throws {
        let deadline = min(deadline, uptime() + SystemClock.longestSleep)
        try await Task.sleep(until: SystemClock.origin + deadline, clock: .continuous)
    }
}

/// A clock that moves only when a test says so.
///
/// ```swift
/// let clock = VirtualClock()
/// var config = LocalStorageConfiguration.inMemory
/// config.clock = clock
/// // … save with .seconds(30) …
/// clock.advance(by: .seconds(31))      // the record has expired; sleepers due by now wake up
/// ```
///
/// Wall time starts at `start` and moves with ``advance(by:)`` in step with ``uptime()`` and the boot time (which
/// starts at the host's). A task that sleeps on this clock wakes when an advance reaches its deadline, never before;
/// ``sleepers`` and ``waitForSleepers(_:)`` let a test wait until the code under test is waiting before it advances.
@_spi(Testing) public final class VirtualClock: StorageClock {
    private struct Sleeper {
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var elapsed: Duration = .zero
        var sleepers: [UInt64: Sleeper] = [:]
        var nextToken: UInt64 = 0
        var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let startNanoseconds: Int64
    private let startBootNanoseconds = SystemClock.bootNanoseconds()
    private let state = Mutex(State())

    /// A clock whose wall time starts at `start` (by default the real time now, so that expirations
    /// given as dates behave as they would).
    public init(start: Date = Date()) {
        startNanoseconds = EpochNanoseconds.nanoseconds(from: start)
    }

    public func wallNanoseconds() -> Int64 {
        let elapsed = state.withLock { $0.elapsed }
        return startNanoseconds.advanced(saturatingBy: elapsed)
    }

    public func uptime() -> Duration { state.withLock { $0.elapsed } }

    /// The host's boot time when the clock was made, moved as wall time is.
    public func bootNanoseconds() -> Int64 {
        let elapsed = state.withLock { $0.elapsed }
        return startBootNanoseconds.advanced(saturatingBy: elapsed)
    }

    /// How many tasks are sleeping on this clock now.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Moves time forward by `duration` and wakes every sleeper whose deadline it reaches.
    public func advance(by duration: Duration) {
        let due: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            state.elapsed += max(duration, .zero)
            let now = state.elapsed
            let tokens = state.sleepers.filter { $0.value.deadline <= now }.map(\.key)
            return tokens.compactMap { state.sleepers.removeValue(forKey: $0)?.continuation }
        }
        for continuation in due { continuation.resume() }
    }

    /// Returns once at least `count` tasks are sleeping on this clock.
    public func waitForSleepers(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.sleeperWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public func sleep(until deadline: Duration) async throws {
        let token = state.withLock { state -> UInt64 in
            state.nextToken += 1
            return state.nextToken
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, waiters) = state.withLock {
                    state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled || deadline <= state.elapsed { return (true, []) }
                    state.sleepers[token] = Sleeper(deadline: deadline, continuation: continuation)
                    let count = state.sleepers.count
                    let ready = state.sleeperWaiters.filter { $0.count <= count }.map(\.continuation)
                    state.sleeperWaiters.removeAll { $0.count <= count }
                    return (false, ready)
                }
                for waiter in waiters { waiter.resume() }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: token) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Wakes exactly when an advance takes wall time to `wallDeadline`, however late the sleep begins.
    public func sleep(untilWallNanoseconds wallDeadline: Int64) async throws {
        try await sleep(until: .nanoseconds(wallDeadline &- startNanoseconds))
    }
}
