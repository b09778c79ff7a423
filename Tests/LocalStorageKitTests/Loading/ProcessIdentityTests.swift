import Foundation
import Testing

@testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#endif

/// How a lease's holder is found gone, which lets a waiter take over before the lease's deadline.
@Suite struct ProcessIdentityTests {
    @Test func aLiveProcessIsNotGone() {
        #expect(!ProcessIdentity.current.isGone)
        let recycled = ProcessIdentity(
            host: ProcessIdentity.current.host, pid: getpid(), started: ProcessIdentity.current.started &+ 1)
        #if os(Linux)
        #expect(recycled.isGone, "a process with the holder's pid that started at another time is another process")
        #endif
    }

    /// `/proc/PID/stat` is read as bytes: the command name may hold spaces and parentheses, the state is field 3, the
    /// thread count field 20, the start time field 22.
    @Test(arguments: [
        ("1234 (app) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 3 0 98765 1000 5", 98_765, false),
        ("1234 (my (odd) app) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 1 0 42 1000 5\n", 42, false),
        ("99 (gone) X 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 1 0 7 0 0", 7, true),
        ("99 (zombie) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 1 0 8 0 0", 8, true),
        ("99 (threads) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 3 0 9 0 0", 9, false),
    ])
    func statusIsReadFromTheStatText(line: String, started: Int, hasEnded: Bool) throws {
        let status = try #require(Array(line.utf8).withUnsafeBufferPointer { ProcessIdentity.parseStat($0) })
        #expect(status.started == UInt64(started))
        #expect(status.hasEnded == hasEnded)
    }

    @Test(arguments: [
        "", "1234 (app", "1234 (app) S 1 2 3", "1234 (app) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 1 0 x",
    ])
    func aStatTextCutShortOrMalformedGivesNoStatus(line: String) {
        #expect(Array(line.utf8).withUnsafeBufferPointer { ProcessIdentity.parseStat($0) } == nil)
    }

    #if os(Linux)
    /// The start time read as bytes is the one a plain reading of this process's `/proc/self/stat` finds.
    @Test func thisProcesssStartTimeIsTheOneTheStatFileGives() throws {
        let text = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        let close = try #require(text.lastIndex(of: ")"))
        let fields = text[text.index(after: close)...].split(separator: " ")
        #expect(ProcessIdentity.startTime(of: getpid()) == UInt64(fields[19]))
        #expect(ProcessIdentity.current.started == UInt64(fields[19]))
    }

    /// A holder killed with SIGKILL whose parent has not reaped it yet is a zombie: its pid still answers `kill(pid, 0)`
    /// and its start time is unchanged, so it read as alive and waiters on its lease waited for the deadline
    /// (review-105 F5).
    @Test func anEndedProcessNotYetReapedIsGone() async throws {
        var pid: pid_t = 0
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { for argument in arguments { free(argument) } }
        try #require(posix_spawn(&pid, "/bin/true", nil, nil, arguments, environ) == 0)
        defer {
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
        let started = try #require(ProcessIdentity.startTime(of: pid))
        let holder = ProcessIdentity(host: ProcessIdentity.current.host, pid: pid, started: started)
        // The child exits at once; until this test reaps it, its pid is a zombie's.
        #expect(await eventually { Self.state(of: pid) == "Z" })
        #expect(kill(pid, 0) == 0, "a zombie's pid is still taken")
        #expect(holder.isGone)
    }

    /// A process whose main thread ended while another thread runs shows state `Z` too, and is alive: a holder in that
    /// state must keep its lease (review-106 R3: it was taken for gone).
    @Test func aProcessWhoseMainThreadEndedIsNotGone() async throws {
        let helper = try HelperProcess(["main-thread-exit"])
        try await helper.waitForLine("ready") { $0 == "ready" }
        let pid = helper.processIdentifier
        let started = try #require(ProcessIdentity.startTime(of: pid))
        let holder = ProcessIdentity(host: ProcessIdentity.current.host, pid: pid, started: started)
        #expect(await eventually { Self.state(of: pid) == "Z" }, "the main thread ended")
        #expect(!holder.isGone)
        await helper.kill()
    }

    /// A child after `fork()` is a process of its own: the leases it takes go under its pid and start time (review-105
    /// F12: the identity was computed once, so a forked child took leases under its parent's, and other processes took
    /// them over as soon as the parent exited).
    @Test func aForkedChildIsItsOwnProcess() throws {
        let parent = ProcessIdentity.current
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let child = fork()
        try #require(child >= 0)
        if child == 0 {
            // A child stuck on a lock another thread held at the fork ends here instead of hanging the suite (the test's
            // thread may block SIGALRM, and the child inherits its mask).
            var alarmOnly = sigset_t()
            sigemptyset(&alarmOnly)
            sigaddset(&alarmOnly, SIGALRM)
            pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
            signal(SIGALRM, SIG_DFL)
            alarm(60)
            let identity = ProcessIdentity.current
            var answer = (identity.host, identity.pid, identity.started)
            let written = withUnsafeBytes(of: &answer) { write(ends[1], $0.baseAddress, $0.count) }
            _exit(written == MemoryLayout.size(ofValue: answer) ? 0 : 1)
        }
        close(ends[1])
        defer { close(ends[0]) }
        var answer: (UInt64, Int32, UInt64) = (0, 0, 0)
        let read = withUnsafeMutableBytes(of: &answer) { Glibc.read(ends[0], $0.baseAddress, $0.count) }
        // The child is a zombie until it is reaped: its start time is still there to read.
        let childStarted = ProcessIdentity.startTime(of: child)
        var status: Int32 = 0
        _ = waitpid(child, &status, 0)
        try #require(read == MemoryLayout.size(ofValue: answer), "the child wrote its identity (status \(status))")
        #expect(answer.0 == parent.host, "the same host")
        #expect(answer.1 == child, "the child's pid, not its parent's \(parent.pid)")
        #expect(answer.2 == childStarted && childStarted != nil)
        #expect(ProcessIdentity.current == parent, "the parent is still itself")
    }

    /// The state letter of process `pid` (field 3 of `/proc/PID/stat`).
    private static func state(of pid: pid_t) -> Character? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ").first?.first
    }
    #endif
}
