import Dispatch
import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// How other processes' changes reach a change stream: read by the stream's own task, in order, once its type is
/// registered, without holding back the deliveries behind them (review-105 F2, F3).
@Suite struct ChangeStreamDeliveryTests {
    /// A file of JSON Lines for `localstorage import` for each of `types`: the records of that type `fill` saves in
    /// a scratch store.
    private static func exports(
        _ types: [String], _ fill: @escaping (LocalStorage) async throws -> Void
    ) async throws -> [URL] {
        let source = try await IntegrityStore(fill)
        var files: [URL] = []
        for type in types {
            let file = source.directory.appendingPathComponent("\(type).jsonl")
            let exported = try await source.run(["export", type, "--output", file.path])
            #expect(exported.status == 0, "\(exported.stderr)")
            files.append(file)
        }
        return files
    }

    /// While a change stream reads a record another process wrote (its decode waits at a gate here), a record watch
    /// gets that process's next commit. Streams decoded on the thread that delivers every commit in order, so the
    /// watch (and live queries, and this process's writer when it delivered) waited for the decode.
    @Test func aStreamReadingAnotherProcesssRecordHoldsNoLaterDeliveryBack() async throws {
        let gate = GatedNote.Gate()
        let files = try await Self.exports(["GatedNote", "StressRecord"]) { storage in
            try await storage.save(GatedNote(id: "slow", text: gate.word))
            try await storage.save(StressRecord.make(id: "w", sequence: 2))
        }
        let store = try await IntegrityStore { storage in
            try await storage.save(StressRecord.make(id: "w", sequence: 1))
            _ = try await storage.count(GatedNote.self)  // registered, as an app would have it
        }
        let storage = store.storage
        let stream = Recorder(storage.changes(of: GatedNote.self))
        let watch = Recorder(storage.updates(of: StressRecord.self, id: "w"))
        defer {
            gate.open()
            stream.cancel()
            watch.cancel()
        }
        #expect(await watch.eventually { $0.last??.sequence == 1 })
        gate.arm()
        #expect(try await store.run(["import", files[0].path]).status == 0)
        #expect(await eventually { gate.isWaiting }, "the stream reads the note")
        #expect(try await store.run(["import", files[1].path]).status == 0)
        let delivered = await watch.eventually(within: .seconds(60)) { $0.last??.sequence == 2 }
        #expect(delivered, "\(watch.values)")
        gate.open()
        #expect(await stream.eventually { !$0.isEmpty })
        #expect(stream.values == [.inserted(GatedNote(id: "slow", text: gate.word))])
    }

    /// Another process's batch of more records than the stream's buffer (10,000) reaches a consumer that keeps up,
    /// every record: the queue of changes its task had not read yet dropped what went past the buffer's size, because
    /// the changes arrive far faster than they decode (review-106 R1: 11,862 of 30,000 arrived).
    @Test func anotherProcesssBatchLargerThanTheBufferReachesAConsumerThatKeepsUp() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(StressRecord.make(id: "seed", sequence: 0))  // the type registered, as an app's
        let events = Recorder(storage.changes(of: StressRecord.self))
        defer { events.cancel() }
        let writer = try HelperProcess(["overwrite", directory.path], withInput: true)
        try await writer.waitForLine("ready") { $0 == "ready" }
        #expect(try await writer.ask("batch b 25000 1") == "ok")
        let arrived = await events.eventually(within: .seconds(300)) { $0.count >= 25_000 }
        #expect(arrived, "\(events.values.count) of 25,000 arrived")
        let inserted = Set(
            events.values.compactMap { change -> String? in
                if case .inserted(let record) = change { return record.id }
                return nil
            })
        #expect(inserted.count == 25_000)
        writer.closeInput()
        await writer.waitForExit()
    }

    /// Another process's changes that arrive before a stream's type is registered here (the registration waits for
    /// this process's writer, held by a transaction) are read once it is: they were dropped, with a warning.
    @Test(.enabled(if: DataFileWatch.isAvailable, "only the data file's watch delivers here"))
    func changesBeforeTheStreamsTypeIsRegisteredAreReadOnceItIs() async throws {
        let files = try await Self.exports(["GatedNote"]) { storage in
            for n in 0..<3 { try await storage.save(GatedNote(id: "n\(n)", text: "note \(n)")) }
        }
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.clock = VirtualClock()  // no timed poll: the data file's watch reads the log
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(StressRecord.make(id: "w", sequence: 1))
        let imported = try await CLIResult.run(
            ["import", files[0].path, "--store", storage.configuration.storeDirectory.path], environment: nil)
        #expect(imported.status == 0, "\(imported.stderr)")
        // This process's writer is held in a transaction: the stream's registration of `GatedNote` waits for it.
        let release = DispatchSemaphore(value: 0)
        let holding = Atomic<Bool>(false)
        let held = Task {
            try await storage.write { _ in
                holding.store(true, ordering: .relaxed)
                release.wait()
            }
        }
        #expect(await eventually { holding.load(ordering: .relaxed) })
        // The stream starts as if the import's commit were not visible to new readers yet: its follower reads that
        // commit's three changes at once, while the writer is held.
        let center = storage.core.liveQueries
        center.startLagForTests.store(3, ordering: .relaxed)
        let stream = Recorder(storage.changes(of: GatedNote.self))
        defer { stream.cancel() }
        let end = try storage.core.environment.read { txn in try storage.core.changeLog.lastSequence(in: txn) }
        #expect(await eventually { center.followedPosition == end }, "the follower read the import's changes")
        release.signal()
        try await held.value
        let arrived = await stream.eventually(within: .seconds(60)) { $0.count == 3 }
        #expect(arrived, "\(stream.values)")
        let ids = stream.values.compactMap { change -> String? in
            if case .inserted(let note) = change { return note.id }
            return nil
        }
        #expect(ids == ["n0", "n1", "n2"])
    }
}

/// A note whose decoding waits at its gate while the gate is armed and the note's text is the gate's word (at most
/// three minutes), so that a test can hold a reader of it in place.
struct GatedNote: LocalStorable, Equatable {
    let id: String
    var text: String

    init(id: String, text: String) {
        self.id = id
        self.text = text
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        text = try container.decode(String.self, forKey: .text)
        Gate.current.withLock { $0 }?.pass(text)
    }

    private enum CodingKeys: String, CodingKey {
        case id, text
    }

    /// Holds the decodes of notes with its word while armed; one gate at a time is current (the last made).
    final class Gate: Sendable {
        static let current = Mutex<Gate?>(nil)
        let word = "gate-\(UUID().uuidString)"
        private let armed = Atomic<Bool>(false)
        private let waiting = Atomic<Bool>(false)
        private let opened = DispatchSemaphore(value: 0)

        init() { Self.current.withLock { $0 = self } }

        /// Whether a decode waits at the gate now.
        var isWaiting: Bool { waiting.load(ordering: .relaxed) }

        func arm() { armed.store(true, ordering: .relaxed) }

        /// Lets a waiting decode (and every later one) through.
        func open() {
            if armed.exchange(false, ordering: .relaxed) { opened.signal() }
        }

        fileprivate func pass(_ text: String) {
            guard text == word, armed.load(ordering: .relaxed) else { return }
            waiting.store(true, ordering: .relaxed)
            _ = opened.wait(timeout: .now() + 180)
            waiting.store(false, ordering: .relaxed)
        }
    }
}
