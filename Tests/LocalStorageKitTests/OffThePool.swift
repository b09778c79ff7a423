import Foundation

@testable import LocalStorageKit

/// Runs `body`, which blocks (waits for a process, sleeps, reads a pipe to its end), on a thread of its own
/// and returns its result: a test blocked on one of the cooperative pool's few threads stalls every other
/// test in the process, and two of them stall them all.
func offThePool<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Runs the program at `path` with `arguments` on a thread of its own; returns its exit status and what it
/// printed on its standard output.
func runTool(_ path: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    try await offThePool {
        let process = try ChildProcess(executable: path, arguments: arguments, standardOutput: .pipe)
        guard let pipe = process.standardOutput else { throw NoPipe() }
        let output = pipe.readDataToEndOfFile()
        return (try process.waitUntilExit().status, String(decoding: output, as: UTF8.self))
    }
}

/// A child started with a piped stream that has no pipe (never: `ChildProcess` makes one for `.pipe`).
struct NoPipe: Error {}
