import Foundation
import LocalStorageKit

/// Runs this executable again with the same arguments, as a child process that does the real work, so that
/// a crash inside LMDB on a damaged file (SIGSEGV, SIGBUS) becomes a report instead of killing the tool.
enum ChildCheck {
    /// Runs the child and waits for it; its output goes straight to ours. Returns its exit status, or 1
    /// after reporting where it was when a signal ended it.
    static func run(stageVariable: String, output: Output) throws -> Int32 {
        let candidate = FileManager.default.temporaryDirectory
            .appendingPathComponent("localstorage-stage-\(UUID().uuidString)")
        // Without a writable temporary directory (another user's TMPDIR) the child still runs; a crash report
        // then cannot say the stage.
        let stageFile =
            FileManager.default.createFile(atPath: candidate.path, contents: Data("starting".utf8)) ? candidate : nil
        defer { if let stageFile { remove(stageFile, output: output) } }
        let executable = URL(fileURLWithPath: executablePath())
        var environment = ProcessInfo.processInfo.environment
        environment[stageVariable] = stageFile?.path ?? ""
        // The report below replaces the runtime's backtrace of the child, which would only be noise here.
        environment["SWIFT_BACKTRACE"] = "enable=no"
        // Not Foundation's `Process`: its `run()` crashes now and then on Linux (see `ChildProcess`).
        let child = try ChildProcess(
            executable: executable.path, arguments: Array(CommandLine.arguments.dropFirst()),
            environment: environment)
        let signal: Int32
        switch try child.waitUntilExit() {
        case .exited(let status): return status
        case .signaled(let number): signal = number
        }
        // A reader that closed the pipe (`localstorage verify | head -1`) ends the child's writes, not LMDB: end
        // the way a tool that wrote into that pipe itself would, without a word about damage.
        if signal == SIGPIPE { return 128 + SIGPIPE }
        var stage = "an unknown stage"
        if let stageFile {
            do {
                stage = try String(contentsOf: stageFile, encoding: .utf8)
            } catch {
                stage += " (\(error))"
            }
        }
        // Only a fault (a bad read of the map, a trap on what it read) says the file is damaged; a signal sent
        // from outside (`kill`, the out-of-memory killer, a stop) ended the check and says nothing about the file.
        guard [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP].contains(signal) else {
            output.message(
                "localstorage: error: the check was ended by signal \(signal) at \(stage), from outside; the store "
                    + "was not found damaged. Run `localstorage verify` again.")
            return 1
        }
        output.message(
            "localstorage: error: the file is damaged at \(stage): the check ended with signal "
                + "\(signal) inside LMDB. `localstorage verify --repair` salvages the records "
                + "that can be read; or remove the store (it is a cache) and let it fill again.")
        return 1
    }

    /// This executable's path: on Linux the link `/proc/self/exe` names (Foundation's `Bundle.main` trapped in its
    /// one-time setup in a CI run of `verify` as another user, on a read-only store), elsewhere `Bundle.main`'s; the
    /// first argument when neither says.
    static func executablePath() -> String {
        #if os(Linux)
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count)
        if count > 0, count < buffer.count {
            return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return CommandLine.arguments[0]
        #else
        return Bundle.main.executablePath ?? CommandLine.arguments[0]
        #endif
    }

    /// Notes the child's current stage in `file` (nothing when there is no file).
    static func write(stage: String, to file: String?) {
        guard let file, !file.isEmpty else { return }
        // Only the wording of a crash report depends on it: a stage that cannot be noted leaves the last one.
        _ = FileManager.default.createFile(atPath: file, contents: Data(stage.utf8))
    }

    private static func remove(_ file: URL, output: Output) {
        do {
            try FileManager.default.removeItem(at: file)
        } catch {
            output.message("localstorage: could not remove \(file.path): \(error)")
        }
    }
}
