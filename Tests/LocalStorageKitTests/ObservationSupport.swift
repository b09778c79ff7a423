import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

// MARK: - Helpers

/// A store on disk holding some notes, watched by a live query of every note that polls for other
/// processes' writes every 20 ms, for the cross-process tests.
struct WatchedStore {
    let directory: URL
    let storage: LocalStorage
    let live: Recorder<[Note]>

    init(holding notes: [Note]) async throws {
        directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.externalChangePollInterval = .milliseconds(20)
        storage = try LocalStorage(configuration: configuration)
        try await storage.save(contentsOf: notes)
        live = Recorder(storage.updates(of: Note.self))
        let ids = notes.map(\.id).sorted()
        #expect(await live.eventually { $0.last?.map(\.id) == ids })
    }

    /// Ends the live query and removes the directory.
    func close() {
        live.cancel()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
///
/// The generous default only matters when the machine is loaded (the suites run in parallel on few
/// cores); a passing condition returns at once.
func eventually(
    within timeout: Duration = .seconds(300), isolation: isolated (any Actor)? = #isolation,
    _ condition: () async throws -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    do {
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return try await condition()
    } catch {
        // A condition that throws fails the test with its error, rather than reading as "not yet".
        Issue.record(error, "the condition threw")
        return false
    }
}

/// Consumes a stream in the background and keeps everything it yields.
final class Recorder<Element: Sendable>: Sendable {
    private let received = Mutex<[Element]>([])
    private let task = Mutex<Task<Void, Never>?>(nil)

    init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
        let consumer = Task { [self] in
            do {
                for try await element in sequence { received.withLock { $0.append(element) } }
            } catch {
                // A stream that ends with an error simply stops recording; the tests check values.
                return
            }
        }
        task.withLock { $0 = consumer }
    }

    /// Everything received so far.
    var values: [Element] { received.withLock { $0 } }

    /// Waits until the values received satisfy `condition`.
    func eventually(
        within timeout: Duration = .seconds(300),
        _ condition: @escaping ([Element]) -> Bool
    ) async -> Bool {
        await LocalStorageKitTests.eventually(within: timeout) { condition(values) }
    }

    /// Stops consuming (ends the stream).
    func cancel() { task.withLock { $0?.cancel() } }
}

/// A logger that keeps its messages.
final class RecordingLogger: StorageLogger {
    private let entries = Mutex<[(StorageLogLevel, String)]>([])

    func log(level: StorageLogLevel, message: String, metadata: [String: String]?) {
        entries.withLock { $0.append((level, message)) }
    }

    func record(duration: TimeInterval, operation: String) {}

    func messages(at level: StorageLogLevel) -> [String] {
        entries.withLock { $0.filter { $0.0 == level }.map(\.1) }
    }
}

/// A user with `role` and `age`, the rest derived from the id.
func user(_ id: String, _ role: User.Role, age: Int) -> User {
    User(id: id, name: id, email: "\(id)@example.com", role: role, age: age, lastSeen: Date(timeIntervalSince1970: 0))
}

/// A note that counts how often it is encoded.
struct EncodeCountedNote: LocalStorable, Equatable {
    static let encodes = CallCounter()
    let id: String
    var text: String

    init(id: String, text: String) {
        self.id = id
        self.text = text
    }

    enum CodingKeys: String, CodingKey { case id, text }

    func encode(to encoder: any Encoder) throws {
        EncodeCountedNote.encodes.increment()
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(text, forKey: .text)
    }
}
