import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// The maintenance tool's reading commands beside another process that is inside a write transaction: the open
/// and the catalog of types are read in read transactions, so the commands answer from the last commit at once.
/// They took LMDB's write lock (the open's first transaction, then the catalog's) and waited for that process's
/// whole write: an app's large batch, an import, a rekey.
@Suite struct CLIBesideAWriteTests {
    @Test func readingCommandsAnswerWhileAnotherProcessIsInsideAWrite() async throws {
        let directory = temporaryDirectory()
        let writer = try HelperProcess(["long-write", directory.path])
        try await writer.waitForLine("the other process's write") { $0 == "inside" }
        let store = diskConfiguration(directory).storeDirectory.path
        let done = CallCounter()
        let commands: [[String]] = [
            ["types"], ["stats"], ["get", "StressRecord", "before"], ["list", "StressRecord"], ["verify"],
            ["export", "StressRecord"],
        ]
        let running = Task { () throws -> [CLIResult] in
            var results: [CLIResult] = []
            for arguments in commands {
                results.append(try await CLIResult.run(arguments + ["--store", store], environment: nil))
            }
            done.increment()
            return results
        }
        var answeredBeside = true
        do {
            // The other process stays inside its write until it is killed below: commands that waited for it would
            // never end, so the wait's bound only turns that into a failure (it is no measure of their speed; 60 s
            // ran out once in a fresh clone's CI run on a loaded machine).
            try await waitUntil("the commands beside the other process's write") { done.value > 0 }
        } catch is WaitTimedOut {
            answeredBeside = false
        }
        await writer.kill()
        let results = try await running.value
        #expect(answeredBeside, "a reading command waited for another process's write transaction")
        for (arguments, result) in zip(commands, results) {
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
        }
        #expect(results[2].stdout.contains("\"before\""), "\(results[2].stdout)")
        // The other process's uncommitted records are not listed.
        for listed in [results[3], results[5]] {
            #expect(listed.stdout.contains("before") && !listed.stdout.contains("inside-"), "\(listed.stdout)")
        }
    }
}
