import CLMDB
import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A reliability figure, printed as one greppable line (`scripts/crash-test.sh` collects them).
func reportFigure(_ text: String) {
    print("[reliability] \(text)")
}

/// The value of an integer environment variable, or `defaultValue`.
func environmentInteger(_ name: String, default defaultValue: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? defaultValue
}

/// The directory LMDB's files of a store in `directory` are in.
func storeFilesDirectory(_ directory: URL) -> URL {
    directory.appendingPathComponent("LocalStorage", isDirectory: true)
}

// MARK: - The helper process

enum HelperError: Error, CustomStringConvertible {
    case notBuilt(String, searched: [String])
    case timedOut(String)

    var description: String {
        switch self {
        case .notBuilt(let name, let searched):
            "\(name) is not built (run `swift build` first); looked in \(searched.joined(separator: ", "))"
        case .timedOut(let what): "timed out waiting for \(what)"
        }
    }
}

/// A built executable of the package (`LocalStorageStress`, `localstorage`): next to the test binary, else
/// in the package's `.build`.
func builtProductURL(_ name: String, filePath: String = #filePath) throws -> URL {
    let manager = FileManager.default
    var searched: [String] = []
    var directories: [URL] = []
    if let executable = try? manager.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        for _ in 0..<4 {
            directories.append(url)
            url = url.deletingLastPathComponent()
        }
    }
    var root = URL(fileURLWithPath: filePath)
    for _ in 0..<4 { root = root.deletingLastPathComponent() }
    let build = root.appendingPathComponent(".build", isDirectory: true)
    directories.append(build.appendingPathComponent("debug", isDirectory: true))
    for platform in (try? manager.contentsOfDirectory(atPath: build.path)) ?? [] {
        directories.append(build.appendingPathComponent(platform).appendingPathComponent("debug"))
    }
    for directory in directories {
        let candidate = directory.appendingPathComponent(name)
        searched.append(directory.path)
        if manager.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    throw HelperError.notBuilt(name, searched: searched)
}

/// A running `LocalStorageStress` process whose standard output is collected line by line.
final class HelperProcess: Sendable {
    private let process: ChildProcess
    private let output = LineCollector()
    /// The process's standard input, when it was started `withInput`.
    private let input: FileHandle?

    private final class LineCollector: Sendable {
        struct State {
            var lines: [String] = []
            var partial: [UInt8] = []
            var isClosed = false
        }
        let state = Mutex(State())

        func withLock<R>(_ body: (inout State) -> R) -> R { state.withLock { body(&$0) } }
    }

    init(_ arguments: [String], executable: String = "LocalStorageStress", withInput: Bool = false) throws {
        process = try ChildProcess(
            executable: try builtProductURL(executable).path, arguments: arguments,
            standardInput: withInput ? .pipe : .inherit, standardOutput: .pipe)
        input = process.standardInput
        guard let handle = process.standardOutput else { throw NoPipe() }
        let output = self.output
        Thread.detachNewThread {
            while true {
                let data = handle.availableData
                output.withLock { output in
                    if data.isEmpty {
                        output.isClosed = true
                        return
                    }
                    for byte in data {
                        if byte == UInt8(ascii: "\n") {
                            output.lines.append(String(decoding: output.partial, as: UTF8.self))
                            output.partial.removeAll()
                        } else {
                            output.partial.append(byte)
                        }
                    }
                }
                if data.isEmpty { return }
            }
        }
    }

    var processIdentifier: Int32 { process.processIdentifier }

    /// The complete lines printed so far (a line cut by the kill is not one).
    var lines: [String] { output.withLock { $0.lines } }

    /// Whether the process closed its standard output: it ended (or is ending).
    var hasClosedOutput: Bool { output.withLock { $0.isClosed } }

    /// Waits until a line satisfies `predicate` and returns it. The output is looked at once more after the
    /// deadline, so a poll that slept past it on a loaded machine does not miss a line that came in time.
    @discardableResult
    func waitForLine(
        _ what: String, timeout: Duration = .seconds(300),
        where predicate: @escaping (String) -> Bool
    ) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (found, closed) = output.withLock { ($0.lines.first(where: predicate), $0.isClosed) }
            if let found { return found }
            if closed || ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw HelperError.timedOut("\(what) (output so far: \(lines.suffix(3)))")
    }

    /// Writes `line` to the process's standard input and returns the next line it prints (looked for once
    /// more after the deadline, as in ``waitForLine(_:timeout:where:)``).
    func ask(_ line: String, timeout: Duration = .seconds(300)) async throws -> String {
        let before = lines.count
        input?.write(Data((line + "\n").utf8))
        let deadline = ContinuousClock.now + timeout
        while true {
            let (reply, closed) = output.withLock { ($0.lines.count > before ? $0.lines[before] : nil, $0.isClosed) }
            if let reply { return reply }
            if closed || ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .microseconds(200))
        }
        throw HelperError.timedOut("a reply to \(line) (output so far: \(lines.suffix(3)))")
    }

    /// Closes the process's standard input (a reading loop then ends).
    func closeInput() {
        try? input?.close()
    }

    /// Kills the process with SIGKILL and waits for it and for the end of its output.
    func kill() async {
        process.kill()
        await waitForExit()
    }

    /// Waits for the process to end and its output to be read to the end; returns its exit status (128 plus
    /// the signal number when a signal ended it; -1 when it did not end in time).
    @discardableResult
    func waitForExit(timeout: Duration = .seconds(120)) async -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        while !output.withLock({ $0.isClosed }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
        return process.termination?.status ?? -1
    }

    deinit {
        process.kill()
    }
}

// MARK: - Files that are not a healthy store

/// A full walk (every page, sub-trees of sorted duplicates included) of the newest snapshot of the data file at
/// `path`, read with `pread`, and the meta page it started from.
func walkDataFile(_ path: String) throws -> (walk: DataFileWalk, meta: MetaPage) {
    let descriptor = open(path, O_RDONLY)
    try #require(descriptor >= 0)
    defer { close(descriptor) }
    var pages = DataFilePages(descriptor: descriptor)
    let meta = try #require(DataFileWalk.newestMeta(&pages).0)
    var walk = DataFileWalk(pages: pages, meta: meta)
    walk.run()
    return (walk, meta)
}

/// Expects opening a store on `directory` to fail with `openFailed` naming a path inside it and giving a
/// reason that contains one of `words`.
func expectOpenFailed(
    _ directory: URL, mentioning words: [String], sourceLocation: SourceLocation = #_sourceLocation
) {
    do {
        _ = try LocalStorage(configuration: diskConfiguration(directory))
        Issue.record("the store opened", sourceLocation: sourceLocation)
    } catch let LocalStorageError.openFailed(path, reason) {
        #expect(path.hasPrefix(directory.path), sourceLocation: sourceLocation)
        #expect(words.contains { reason.contains($0) }, "\(reason)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected openFailed, got \(error)", sourceLocation: sourceLocation)
    }
}

// MARK: - Closing a store

/// Runs `body` with a store on `configuration` and waits until the store has closed (its environment
/// is gone from this process), so the files can be changed or opened by another process.
func withStore<R>(
    _ configuration: LocalStorageConfiguration,
    _ body: (LocalStorage) async throws -> R
) async throws -> R {
    weak var core: StoreCore?
    let result: R
    do {
        let storage = try LocalStorage(configuration: configuration)
        core = storage.core
        result = try await body(storage)
    }
    let deadline = ContinuousClock.now + .seconds(60)
    while core != nil && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
    }
    if core != nil { throw HelperError.timedOut("the store to close") }
    return result
}

// MARK: - Consistency

/// The problems the maintenance `verify` finds in an on-disk store (headers that do not parse, payloads that
/// are not JSON, index, update-time and expiry entries that do not match the records), one line each.
/// It shares the store's environment, as the CLI would in the app's process.
func verifyProblems(_ storage: LocalStorage) async throws -> [String] {
    let maintenance = try await StoreMaintenance(directory: storage.core.directory)
    return try maintenance.verify().problems.map(\.description)
}

/// Runs `localstorage verify` on a store directory in its own process; returns its exit status and output.
func verifyWithTheCLI(_ directory: URL) async throws -> (status: Int32, output: String) {
    let cli = try HelperProcess(["verify", "--store", storeFilesDirectory(directory).path], executable: "localstorage")
    let status = await cli.waitForExit()
    return (status, cli.lines.joined(separator: "\n"))
}
