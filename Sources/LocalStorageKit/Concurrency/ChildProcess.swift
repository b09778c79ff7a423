#if canImport(Glibc) || os(macOS)
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, for the CLI's crash-isolated check, the tests and the benchmark.
///
/// Foundation's `Process.run()` on Linux walks `/proc/self/fd` with a `dirent` copy that reads past the end of
/// glibc's buffer and crashes now and then (swift-corelibs-foundation #5472); this type does what the package
/// needs without it. The child gets its standard streams as asked (``Stdio``) and no other descriptor of
/// ours: the pipes' ends are close-on-exec in this process, and the child closes every descriptor above 2
/// (`posix_spawn_file_actions_addclosefrom_np` on Linux, `POSIX_SPAWN_CLOEXEC_DEFAULT` on macOS). Its signal
/// mask is empty and every signal has its default action, whatever this process blocks or ignores.
///
/// The process is reaped once, under a lock: ``waitUntilExit()`` blocks without reaping (`waitid` with
/// `WNOWAIT`), so the pid stays this child's and ``kill(_:)`` never signals another process that reused it. A
/// child dropped while it runs is reaped by a thread of its own when it ends.
package final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    package enum Stdio: Sendable {
        /// This process's own stream.
        case inherit
        /// `/dev/null`.
        case nullDevice
        /// A pipe whose other end is ``ChildProcess/standardInput`` (writable) or
        /// ``ChildProcess/standardOutput`` / ``ChildProcess/standardError`` (readable).
        case pipe
        /// A descriptor of this process, duplicated into the child (the caller keeps and closes it).
        case fileDescriptor(Int32)
    }

    /// How the child ended.
    package enum Termination: Sendable, Equatable, CustomStringConvertible {
        /// It exited with this status.
        case exited(Int32)
        /// This signal ended it.
        case signaled(Int32)

        /// Decodes a `waitpid` status (the `WIFEXITED` / `WEXITSTATUS` / `WTERMSIG` macros, which Swift does not
        /// import): the low 7 bits are the signal that ended the process, 0 when it exited, and the next 8 bits
        /// its exit status.
        package init(waitStatus: Int32) {
            let signal = waitStatus & 0x7f
            self = signal == 0 ? .exited((waitStatus >> 8) & 0xff) : .signaled(signal)
        }

        /// The exit status, or 128 plus the signal number, as a shell reports it: a signal never reads as a
        /// small exit status.
        package var status: Int32 {
            switch self {
            case .exited(let status): status
            case .signaled(let signal): 128 + signal
            }
        }

        package var description: String {
            switch self {
            case .exited(let status): "exit status \(status)"
            case .signaled(let signal): "signal \(signal)"
            }
        }
    }

    /// Why a child could not be started or waited for: the executable, the call that failed and its errno
    /// (nil when the failure was not a system call's).
    package struct Failure: Error, CustomStringConvertible {
        package let executable: String
        package let operation: String
        package let code: Int32?
        let reason: String

        init(executable: String, operation: String, code: Int32) {
            self.executable = executable
            self.operation = operation
            self.code = code
            reason = "\(String(cString: strerror(code))) (errno \(code))"
        }

        init(executable: String, operation: String, error: any Error) {
            self.executable = executable
            self.operation = operation
            code = nil
            reason = "\(error)"
        }

        package var description: String { "\(operation) failed for \(executable): \(reason)" }
    }

    private enum State {
        case running
        case ended(Termination)
        case failed(Failure)
    }

    package let executable: String
    package let processIdentifier: pid_t
    /// The writable end of the child's standard input, when it is a ``Stdio/pipe``.
    package let standardInput: FileHandle?
    /// The readable end of the child's standard output, when it is a ``Stdio/pipe``.
    package let standardOutput: FileHandle?
    /// The readable end of the child's standard error, when it is a ``Stdio/pipe``.
    package let standardError: FileHandle?
    private let state = Mutex(State.running)

    /// Starts `executable` (a path: the `PATH` is not searched) with `arguments` (without the program name)
    /// and `environment` (this process's when nil). Throws a ``Failure`` when a pipe cannot be made or the
    /// program cannot be started (a missing executable: `ENOENT`).
    package init(
        executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        standardInput: Stdio = .inherit, standardOutput: Stdio = .inherit, standardError: Stdio = .inherit
    ) throws {
        self.executable = executable
        var spawn = try SpawnRequest(executable: executable)
        defer { spawn.release() }
        let input = try spawn.attach(standardInput, to: 0)
        let output = try spawn.attach(standardOutput, to: 1)
        let error = try spawn.attach(standardError, to: 2)
        processIdentifier = try spawn.run(
            arguments: [executable] + arguments,
            environment: environment ?? ProcessInfo.processInfo.environment)
        self.standardInput = input.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.standardOutput = output.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.standardError = error.map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
    }

    deinit {
        let unreaped = state.withLock { state -> Bool in
            guard case .running = state else { return false }
            return ChildProcess.reap(processIdentifier, executable: executable, into: &state, options: WNOHANG)
                == nil
        }
        guard unreaped else { return }
        // Nothing else can reap it now: a thread waits for it, so it does not stay a zombie.
        let pid = processIdentifier
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }
    }

    /// Whether the child has not ended yet (it is reaped here when it has).
    package var isRunning: Bool {
        state.withLock { state in
            guard case .running = state else { return false }
            return ChildProcess.reap(processIdentifier, executable: executable, into: &state, options: WNOHANG)
                == nil
        }
    }

    /// How the child ended, or nil while it runs.
    package var termination: Termination? {
        isRunning ? nil : state.withLock { state in if case .ended(let how) = state { how } else { nil } }
    }

    /// Blocks until the child ends and returns how. Throws when it cannot be waited for (someone else reaped
    /// it: `ECHILD`).
    @discardableResult
    package func waitUntilExit() throws -> Termination {
        while true {
            let done = state.withLock { state -> Result<Termination, Failure>? in
                if case .running = state {
                    _ = ChildProcess.reap(processIdentifier, executable: executable, into: &state, options: WNOHANG)
                }
                switch state {
                case .running: return nil
                case .ended(let termination): return .success(termination)
                case .failed(let failure): return .failure(failure)
                }
            }
            if let done { return try done.get() }
            // Waits for the end without reaping: only `reap`, under the lock, reaps.
            var info = siginfo_t()
            if waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) != 0 {
                let code = errno
                guard code != EINTR else { continue }
                state.withLock { state in
                    if case .running = state {
                        state = .failed(Failure(executable: executable, operation: "waitid", code: code))
                    }
                }
            }
        }
    }

    /// Sends `signal` to the child unless it has been reaped; returns whether it was sent.
    @discardableResult
    package func kill(_ signal: Int32 = SIGKILL) -> Bool {
        state.withLock { state in
            guard case .running = state else { return false }
            return sendSignal(signal, to: processIdentifier)
        }
    }

    /// Sends SIGTERM (see ``kill(_:)``).
    @discardableResult
    package func terminate() -> Bool { kill(SIGTERM) }

    /// `waitpid(pid, options)` once (again after EINTR): records the end or the failure in `state` and returns
    /// it, or nil while the child runs. Called under the lock only.
    private static func reap(
        _ pid: pid_t, executable: String, into state: inout State, options: Int32
    ) -> State? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, options)
            if result == pid {
                state = .ended(Termination(waitStatus: status))
                return state
            }
            if result == 0 { return nil }
            let code = errno
            if code == EINTR { continue }
            state = .failed(Failure(executable: executable, operation: "waitpid", code: code))
            return state
        }
    }
}

/// `kill(2)`, outside the class, whose own `kill(_:)` hides it.
private func sendSignal(_ signal: Int32, to pid: pid_t) -> Bool {
    kill(pid, signal) == 0
}

/// The file actions and attributes of one `posix_spawn`, and the descriptors made for it.
private struct SpawnRequest {
    #if canImport(Darwin)
    var actions: posix_spawn_file_actions_t? = nil
    var attributes: posix_spawnattr_t? = nil
    #else
    var actions = posix_spawn_file_actions_t()
    var attributes = posix_spawnattr_t()
    #endif
    let executable: String
    /// Both ends of every pipe made: closed by ``release()``, but for ours after a spawn.
    var pipeEnds: [Int32] = []
    /// Our ends of the pipes: handed to the caller after a spawn.
    var parentEnds: [Int32] = []
    var spawned = false

    init(executable: String) throws {
        self.executable = executable
        var code = posix_spawn_file_actions_init(&actions)
        guard code == 0 else { throw failure("posix_spawn_file_actions_init", code) }
        code = posix_spawnattr_init(&attributes)
        guard code == 0 else {
            posix_spawn_file_actions_destroy(&actions)
            throw failure("posix_spawnattr_init", code)
        }
    }

    func failure(_ operation: String, _ code: Int32) -> ChildProcess.Failure {
        ChildProcess.Failure(executable: executable, operation: operation, code: code)
    }

    /// Arranges the child's descriptor `target` as `stdio` asks; returns our end of a pipe.
    mutating func attach(_ stdio: ChildProcess.Stdio, to target: Int32) throws -> Int32? {
        var code: Int32 = 0
        var parentEnd: Int32?
        switch stdio {
        case .inherit:
            #if canImport(Darwin)
            // POSIX_SPAWN_CLOEXEC_DEFAULT closes every descriptor that no action names.
            code = posix_spawn_file_actions_addinherit_np(&actions, target)
            #endif
        case .nullDevice:
            code = posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
        case .pipe:
            let (readEnd, writeEnd) = try makePipe()
            let childEnd = target == 0 ? readEnd : writeEnd
            parentEnd = target == 0 ? writeEnd : readEnd
            parentEnds.append(target == 0 ? writeEnd : readEnd)
            // dup2 leaves the child's copy without close-on-exec; the pipe's own ends close at exec.
            code = posix_spawn_file_actions_adddup2(&actions, childEnd, target)
        case .fileDescriptor(let descriptor):
            code = posix_spawn_file_actions_adddup2(&actions, descriptor, target)
        }
        guard code == 0 else { throw failure("posix_spawn_file_actions for descriptor \(target)", code) }
        return parentEnd
    }

    /// A pipe whose two ends are close-on-exec (atomically where `pipe2` exists).
    mutating func makePipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        #if canImport(Glibc)
        if let pipe2 = libcPipe2 {
            guard pipe2(&ends, O_CLOEXEC) == 0 else { throw failure("pipe2", errno) }
        } else {
            guard pipe(&ends) == 0 else { throw failure("pipe", errno) }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        }
        #else
        guard pipe(&ends) == 0 else { throw failure("pipe", errno) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        #endif
        // Both ends are recorded at once, so a failure below closes them.
        pipeEnds.append(contentsOf: ends)
        return (ends[0], ends[1])
    }

    /// Spawns the child; its descriptors above 2 are closed and its signals reset. Returns its pid.
    mutating func run(arguments: [String], environment: [String: String]) throws -> pid_t {
        #if canImport(Glibc)
        if let closeFrom = libcAddCloseFrom {
            let code = closeFrom(&actions, 3)
            guard code == 0 else { throw failure("posix_spawn_file_actions_addclosefrom_np", code) }
        } else {
            try closeInheritedDescriptors()
        }
        let flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        #else
        let flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        sigdelset(&allSignals, SIGKILL)
        sigdelset(&allSignals, SIGSTOP)
        var code = posix_spawnattr_setsigmask(&attributes, &noSignals)
        if code == 0 { code = posix_spawnattr_setsigdefault(&attributes, &allSignals) }
        if code == 0 { code = posix_spawnattr_setflags(&attributes, Int16(truncatingIfNeeded: flags)) }
        guard code == 0 else { throw failure("posix_spawnattr", code) }

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        code = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard code == 0 else { throw failure("posix_spawn", code) }
        spawned = true
        return pid
    }

    #if canImport(Glibc)
    /// Without `posix_spawn_file_actions_addclosefrom_np` (glibc before 2.34): a close action for every
    /// descriptor above 2 open now (one opened meanwhile by another thread may stay open in the child).
    mutating func closeInheritedDescriptors() throws {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        } catch {
            throw ChildProcess.Failure(executable: executable, operation: "listing /proc/self/fd", error: error)
        }
        for descriptor in names.compactMap({ Int32($0) }) where descriptor > 2 {
            let code = posix_spawn_file_actions_addclose(&actions, descriptor)
            guard code == 0 else { throw failure("posix_spawn_file_actions_addclose", code) }
        }
    }
    #endif

    /// Closes the child's pipe ends (and, when the spawn failed, ours) and frees the actions and attributes.
    mutating func release() {
        for end in pipeEnds where !(spawned && parentEnds.contains(end)) { close(end) }
        posix_spawn_file_actions_destroy(&actions)
        posix_spawnattr_destroy(&attributes)
    }
}

#if canImport(Glibc)
// Functions glibc has that Swift's Glibc module does not import (they need `_GNU_SOURCE` or `__USE_MISC`),
// looked up once; nil on a glibc without them.
private typealias Pipe2Function = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
private typealias AddCloseFromFunction =
    @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
private let libcPipe2: Pipe2Function? = libcSymbol("pipe2").map { unsafeBitCast($0, to: Pipe2Function.self) }
/// glibc 2.34 and later.
private let libcAddCloseFrom: AddCloseFromFunction? = libcSymbol("posix_spawn_file_actions_addclosefrom_np").map {
    unsafeBitCast($0, to: AddCloseFromFunction.self)
}

private func libcSymbol(_ name: String) -> UnsafeMutableRawPointer? {
    dlsym(dlopen(nil, RTLD_NOW), name)
}
#endif
#endif
