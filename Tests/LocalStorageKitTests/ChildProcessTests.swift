#if canImport(Glibc) || os(macOS)
import Foundation
import Testing

@testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `ChildProcess`, the posix_spawn child the CLI's check, the tests and the benchmark run programs with.
@Suite struct ChildProcessTests {
    @Test func decodesWaitStatuses() {
        #expect(ChildProcess.Termination(waitStatus: 0) == .exited(0))
        #expect(ChildProcess.Termination(waitStatus: 0x0300) == .exited(3))
        #expect(ChildProcess.Termination(waitStatus: 0xff00) == .exited(255))
        #expect(ChildProcess.Termination(waitStatus: 0x000f) == .signaled(15))
        // 0x80: a core was dumped.
        #expect(ChildProcess.Termination(waitStatus: 0x008b) == .signaled(11))
        #expect(ChildProcess.Termination.exited(3).status == 3)
        #expect(ChildProcess.Termination.signaled(9).status == 137)
    }

    @Test func reportsTheExitStatus() async throws {
        let ended = try await offThePool {
            try ChildProcess(executable: "/bin/sh", arguments: ["-c", "exit 3"]).waitUntilExit()
        }
        #expect(ended == .exited(3))
        let succeeded = try await offThePool {
            try ChildProcess(executable: "/bin/sh", arguments: ["-c", "true"]).waitUntilExit()
        }
        #expect(succeeded == .exited(0))
    }

    @Test func reportsTheSignalThatEndedTheChild() async throws {
        let ended = try await offThePool {
            try ChildProcess(executable: "/bin/sh", arguments: ["-c", "kill -SEGV $$"]).waitUntilExit()
        }
        #expect(ended == .signaled(SIGSEGV))
        #expect(ended.status == 128 + SIGSEGV)
    }

    @Test func killsAndReapsOnce() async throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["600"])
        #expect(child.isRunning)
        #expect(child.termination == nil)
        // SIGKILL, which no mask blocks: this test ends however the child's signals were set up.
        #expect(child.kill(SIGKILL))
        // Two waiters and a poller at once: each sees the one end, none reaps twice.
        async let first = offThePool { try child.waitUntilExit() }
        async let second = offThePool { try child.waitUntilExit() }
        while child.isRunning { await Task.yield() }
        let (a, b) = try await (first, second)
        #expect(a == .signaled(SIGKILL))
        #expect(b == .signaled(SIGKILL))
        #expect(child.termination == .signaled(SIGKILL))
        #expect(try child.waitUntilExit() == .signaled(SIGKILL))
        // Reaped: no signal goes to the pid, which another process may now have.
        #expect(!child.kill())
    }

    @Test func capturesMoreOutputThanAPipeHolds() async throws {
        // 200 000 bytes on standard output, then 100 000 on standard error: each blocks on a full pipe until
        // it is read, so both are read at once.
        let child = try ChildProcess(
            executable: "/bin/sh", arguments: ["-c", "head -c 200000 /dev/zero; head -c 100000 /dev/zero >&2"],
            standardOutput: .pipe, standardError: .pipe)
        let out = try #require(child.standardOutput)
        let err = try #require(child.standardError)
        async let output = offThePool { out.readDataToEndOfFile() }
        async let errors = offThePool { err.readDataToEndOfFile() }
        let (outData, errData) = try await (output, errors)
        #expect(outData.count == 200_000)
        #expect(outData.allSatisfy { $0 == 0 })
        #expect(errData.count == 100_000)
        #expect(try await offThePool { try child.waitUntilExit() } == .exited(0))
    }

    @Test func forwardsStandardInput() async throws {
        let child = try ChildProcess(executable: "/bin/cat", standardInput: .pipe, standardOutput: .pipe)
        let input = try #require(child.standardInput)
        let output = try #require(child.standardOutput)
        // More than a pipe holds, written while the output is read.
        let text = (0..<20_000).map { "line \($0)\n" }.joined()
        async let written: Void = offThePool {
            input.write(Data(text.utf8))
            try input.close()
        }
        async let read = offThePool { output.readDataToEndOfFile() }
        let (_, echoed) = try await (written, read)
        #expect(String(decoding: echoed, as: UTF8.self) == text)
        #expect(try await offThePool { try child.waitUntilExit() } == .exited(0))
    }

    @Test func aMissingExecutableThrows() throws {
        let path = temporaryDirectory().appendingPathComponent("no-such-program").path
        do {
            let child = try ChildProcess(executable: path, standardOutput: .pipe)
            Issue.record("started \(path) as pid \(child.processIdentifier)")
        } catch let failure as ChildProcess.Failure {
            #expect(failure.code == ENOENT)
            #expect(failure.executable == path)
            #expect(failure.description.contains(path))
        }
    }

    @Test func passesTheEnvironment() async throws {
        let given = try await run("/usr/bin/env", environment: ["LSK_CHILD": "a value", "OTHER": "2"])
        #expect(given.split(separator: "\n").sorted() == ["LSK_CHILD=a value", "OTHER=2"])
        let inherited = try await run("/usr/bin/env", environment: nil)
        let path = try #require(ProcessInfo.processInfo.environment["PATH"])
        #expect(inherited.split(separator: "\n").contains("PATH=\(path)"[...]))
    }

    @Test func sendsNullAndDescriptors() async throws {
        let file = temporaryDirectory().appendingPathComponent("out")
        try Data().write(to: file)
        let handle = try FileHandle(forWritingTo: file)
        let child = try ChildProcess(
            executable: "/bin/sh", arguments: ["-c", "echo to-file; cat; echo to-null >&2"],
            standardInput: .nullDevice, standardOutput: .fileDescriptor(handle.fileDescriptor),
            standardError: .nullDevice)
        try handle.close()
        #expect(try await offThePool { try child.waitUntilExit() } == .exited(0))
        #expect(try String(contentsOf: file, encoding: .utf8) == "to-file\n")
    }

    #if os(Linux)
    @Test func theChildGetsItsStreamsAndNoOtherDescriptor() async throws {
        // A descriptor of ours without close-on-exec: the child must not have it.
        let stray = open("/dev/null", O_RDONLY)
        try #require(stray > 2)
        defer { close(stray) }
        let listing = try await run(
            "/bin/sh", ["-c", "for fd in 0 1 2 \(stray); do test -e /proc/$$/fd/$fd && echo $fd; done; exit 0"],
            environment: nil)
        #expect(listing == "0\n1\n2\n")
    }

    @Test func terminateSendsSIGTERM() async throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["600"])
        #expect(child.terminate())
        // Should SIGTERM not end it (a mask the child kept), SIGKILL does after a generous deadline, and the
        // test fails instead of waiting for ever. The test itself waits for the exit, not for time.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(60))
            child.kill(SIGKILL)
        }
        defer { watchdog.cancel() }
        let ended = try await offThePool { try child.waitUntilExit() }
        #expect(ended == .signaled(SIGTERM))
    }

    @Test func theChildStartsWithNoSignalBlocked() async throws {
        // Spawned from a thread that blocks SIGUSR1, SIGUSR2 and SIGPIPE: the child blocks none of them.
        let blocked = try await offThePool { () throws -> String in
            var set = sigset_t()
            sigemptyset(&set)
            for signal in [SIGUSR1, SIGUSR2, SIGPIPE] { sigaddset(&set, signal) }
            pthread_sigmask(SIG_BLOCK, &set, nil)
            // grep reads its own status (a shell blocks every signal while it waits for a child).
            let child = try ChildProcess(
                executable: "/bin/grep", arguments: ["SigBlk", "/proc/self/status"], standardOutput: .pipe)
            guard let output = child.standardOutput else { throw NoPipe() }
            let text = String(decoding: output.readDataToEndOfFile(), as: UTF8.self)
            try child.waitUntilExit()
            return text
        }
        #expect(blocked.split(separator: "\t").last == "0000000000000000\n")
    }
    #endif

    /// Runs `executable` and returns its standard output; expects it to exit with status 0.
    private func run(
        _ executable: String, _ arguments: [String] = [], environment: [String: String]?,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String {
        let (termination, output) = try await offThePool { () throws -> (ChildProcess.Termination, Data) in
            let child = try ChildProcess(
                executable: executable, arguments: arguments, environment: environment, standardOutput: .pipe)
            guard let output = child.standardOutput else { throw NoPipe() }
            let data = output.readDataToEndOfFile()
            return (try child.waitUntilExit(), data)
        }
        #expect(termination == .exited(0), sourceLocation: sourceLocation)
        return String(decoding: output, as: UTF8.self)
    }
}
#endif
