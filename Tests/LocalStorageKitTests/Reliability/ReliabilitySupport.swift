import CLMDB
import Foundation
import Synchronization
@testable import LocalStorageKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The record the `LocalStorageStress` helper writes (the same declaration, so the tests can read it).
struct StressRecord: LocalStorageIndexed, Equatable {
    let id: String
    var group: String?
    var sequence: Int
    var blob: String

    static var storageIndexes: [StorageIndex<StressRecord>] {
        [StorageIndex("group", \.group), StorageIndex("sequence", \.sequence)]
    }
}

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
    case notBuilt(searched: [String])
    case timedOut(String)

    var description: String {
        switch self {
        case .notBuilt(let searched):
            "LocalStorageStress is not built (run `swift build` first); looked in \(searched.joined(separator: ", "))"
        case .timedOut(let what): "timed out waiting for \(what)"
        }
    }
}

/// The `LocalStorageStress` executable: next to the test binary, else in the package's `.build`.
func stressHelperURL(filePath: String = #filePath) throws -> URL {
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
        let candidate = directory.appendingPathComponent("LocalStorageStress")
        searched.append(directory.path)
        if manager.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    throw HelperError.notBuilt(searched: searched)
}

/// A running `LocalStorageStress` process whose standard output is collected line by line.
final class HelperProcess: @unchecked Sendable {
    // @unchecked: `process` is only used by the test that started it; the output is behind a Mutex.
    private let process = Process()
    private let output = LineCollector()

    private final class LineCollector: Sendable {
        struct State {
            var lines: [String] = []
            var partial: [UInt8] = []
            var isClosed = false
        }
        let state = Mutex(State())

        func withLock<R>(_ body: (inout State) -> R) -> R { state.withLock { body(&$0) } }
    }

    init(_ arguments: [String]) throws {
        process.executableURL = try stressHelperURL()
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let handle = pipe.fileHandleForReading
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

    /// Waits until a line satisfies `predicate` and returns it.
    @discardableResult
    func waitForLine(_ what: String, timeout: Duration = .seconds(60),
                     where predicate: @escaping (String) -> Bool) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let (found, closed) = output.withLock { ($0.lines.first(where: predicate), $0.isClosed) }
            if let found { return found }
            if closed { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw HelperError.timedOut("\(what) (output so far: \(lines.suffix(3)))")
    }

    /// Kills the process with SIGKILL and waits for it and for the end of its output.
    func kill() async {
        sendSignal(SIGKILL, to: process.processIdentifier)
        await waitForExit()
    }

    /// Waits for the process to end and its output to be read to the end; returns its exit status.
    @discardableResult
    func waitForExit(timeout: Duration = .seconds(120)) async -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        while !output.withLock({ $0.isClosed }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
        return process.isRunning ? -1 : process.terminationStatus
    }

    deinit {
        if process.isRunning { sendSignal(SIGKILL, to: process.processIdentifier) }
    }
}

/// Sends `signal` to the process `pid` (a free function: the helper's own `kill()` hides the C call).
func sendSignal(_ signal: Int32, to pid: Int32) {
    _ = kill(pid, signal)
}

// MARK: - Closing a store

/// Runs `body` with a store on `configuration` and waits until the store has closed (its environment
/// is gone from this process), so the files can be changed or opened by another process.
func withStore<R>(_ configuration: LocalStorageConfiguration,
                  _ body: (LocalStorage) async throws -> R) async throws -> R {
    weak var core: StoreCore?
    let result: R
    do {
        let storage = try LocalStorage(configuration: configuration)
        core = storage.core
        result = try await body(storage)
    }
    let deadline = ContinuousClock.now + .seconds(10)
    while core != nil && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
    }
    if core != nil { throw HelperError.timedOut("the store to close") }
    return result
}

// MARK: - Consistency

/// Checks that a store's records and entries agree: every record's header parses and its JSON payload
/// is JSON; the update-time, expiry and index databases hold exactly the entries the headers call for
/// (including the `00 00` "no value" key), no more, no fewer. Returns a line per problem.
///
/// This is the test suite's own check until the CLI's `verify` (StoreMaintenance) is on this branch.
enum ConsistencyCheck {
    private struct Entry: Hashable {
        let key: [UInt8]
        let value: [UInt8]
    }

    static func problems(in storage: LocalStorage) async throws -> [String] {
        let meta = storage.core.meta
        // A write transaction (on the writer thread) so that every type's databases can be opened.
        return try await storage.core.writer.perform { context in
            try problems(meta: meta, txn: context.txn)
        }
    }

    static func problems(meta: MDB_dbi, txn: Transaction) throws -> [String] {
        var problems: [String] = []
        for info in try StoreCore.typeInfos(meta: meta, in: txn) {
            let schema = try StoreCore.schema(for: info, in: txn)
            var updated = Set<Entry>()
            var expiry = Set<Entry>()
            var indexes = [String: Set<Entry>]()
            try txn.withCursor(schema.records) { cursor in
                var entry = try cursor.move(MDB_FIRST)
                while let current = entry {
                    let key = Array(current.key)
                    let id = String(decoding: key, as: UTF8.self)
                    do {
                        let view = try RecordView(current.value)
                        let header = view.header()
                        if view.format == .json, (try? JSONSerialization.jsonObject(
                            with: Data(view.payload), options: [.fragmentsAllowed])) == nil {
                            problems.append("\(info.name) \(id): the payload is not JSON")
                        }
                        updated.insert(Entry(key: RecordWriter.timeKey(header.updatedAt), value: key))
                        if header.expiresAt != 0 {
                            expiry.insert(Entry(key: RecordWriter.timeKey(header.expiresAt), value: key))
                        }
                        for index in schema.indexes {
                            indexes[index.name, default: []].insert(
                                Entry(key: RecordWriter.indexKey(of: header, for: index), value: key))
                        }
                    } catch {
                        problems.append("\(info.name) \(id): \(error)")
                    }
                    entry = try cursor.move(MDB_NEXT)
                }
            }
            try compare(txn: txn, dbi: schema.updated, expected: updated, label: "\(info.name) update time",
                        into: &problems)
            try compare(txn: txn, dbi: schema.expiry, expected: expiry, label: "\(info.name) expiry",
                        into: &problems)
            for index in schema.indexes {
                try compare(txn: txn, dbi: index.dbi, expected: indexes[index.name] ?? [],
                            label: "\(info.name) index \(index.name)", into: &problems)
            }
        }
        return problems
    }

    private static func compare(txn: Transaction, dbi: MDB_dbi, expected: Set<Entry>, label: String,
                                into problems: inout [String]) throws {
        var actual = Set<Entry>()
        try txn.withCursor(dbi) { cursor in
            var entry = try cursor.move(MDB_FIRST)
            while let current = entry {
                actual.insert(Entry(key: Array(current.key), value: Array(current.value)))
                entry = try cursor.move(MDB_NEXT)
            }
        }
        for missing in expected.subtracting(actual).prefix(5) {
            problems.append("\(label): missing entry for \(String(decoding: missing.value, as: UTF8.self))")
        }
        for dangling in actual.subtracting(expected).prefix(5) {
            problems.append("\(label): entry for \(String(decoding: dangling.value, as: UTF8.self)) matches no record")
        }
    }
}
