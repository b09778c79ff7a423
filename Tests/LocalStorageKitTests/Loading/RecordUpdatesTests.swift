import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

@Suite struct RecordUpdatesTests {
    /// A store on a new directory that looks for other processes' commits every 20 ms.
    private static func pollingStore() throws -> (directory: URL, storage: LocalStorage) {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.externalChangePollInterval = .milliseconds(20)
        return (directory, try LocalStorage(configuration: configuration))
    }

    /// An import that changes a record's value and keeps its update time (`localstorage import` of an edited
    /// export, in another process) reaches the record's stream and a live query: they compared update times alone
    /// and stayed on the old value (trial93 #1), while fetches and change streams had the new one.
    @Test func anImportThatKeepsTheUpdateTimeStillUpdatesTheStreams() async throws {
        let store = try await IntegrityStore { try await $0.save(Note(id: "n", text: "original")) }
        let storage = store.storage
        let record = Recorder(storage.updates(of: Note.self, id: "n"))
        let query = Recorder(storage.updates(of: Note.self))
        defer {
            record.cancel()
            query.cancel()
        }
        #expect(await record.eventually { $0.last??.text == "original" })
        #expect(await query.eventually { $0.last?.first?.text == "original" })
        let exported = try await store.run(["export"])
        #expect(exported.stdout.contains("\"original\""), "\(exported.stderr)")
        let file = store.directory.appendingPathComponent("edited.jsonl")
        try Data(exported.stdout.replacingOccurrences(of: "\"original\"", with: "\"EDITED\"").utf8).write(to: file)
        let imported = try await store.run(["import", file.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try await storage.fetch(Note.self, id: "n")?.text == "EDITED")
        #expect(await record.eventually { $0.last??.text == "EDITED" }, "\(record.values)")
        #expect(await query.eventually { $0.last?.first?.text == "EDITED" }, "\(query.values)")
    }

    @Test func updatesSeeAnotherProcessesWriteAndDelete() async throws {
        let (directory, storage) = try Self.pollingStore()
        try await storage.save(StressRecord.make(id: "watched", sequence: 1))
        var values = storage.updates(of: StressRecord.self, id: "watched").makeAsyncIterator()
        #expect(try await values.next()??.sequence == 1)
        let writer = try HelperProcess(["overwrite", directory.path], withInput: true)
        try await writer.waitForLine("ready") { $0 == "ready" }
        #expect(try await writer.ask("save other 5") == "ok")
        #expect(try await writer.ask("save watched 2") == "ok")
        #expect(try await values.next()??.sequence == 2)
        #expect(try await writer.ask("delete watched") == "ok")
        let afterDelete = try await values.next()
        #expect(afterDelete == .some(nil))
        #expect(try await writer.ask("save watched 3") == "ok")
        #expect(try await values.next()??.sequence == 3)
        writer.closeInput()
        await writer.waitForExit()
    }

    /// Another process's batch of more changes than its change log keeps: most entries are trimmed in the commit
    /// that wrote them, so no change this process reads names those records. `updates(of:id:)` of one of them
    /// reads it again all the same (trial87 #3: it stayed at nil while the record existed).
    @Test func updatesSeeARecordOfAnotherProcesssBatchWhoseEntryWasTrimmed() async throws {
        let (directory, storage) = try Self.pollingStore()
        try await storage.save(StressRecord.make(id: "first", sequence: 1))
        let (seen, watcher) = try await SequenceWatch.start(storage, id: "b50")
        defer { watcher.cancel() }
        let writer = try HelperProcess(["overwrite-retention", directory.path, "10"], withInput: true)
        try await writer.waitForLine("ready") { $0 == "ready" }
        #expect(try await writer.ask("batch b 200 7") == "ok")
        let heard = await eventually(within: .seconds(120)) { seen.last == 7 }
        #expect(heard, "seen \(seen.values), lost reads \(storage.core.liveQueries.lostReadCount)")
        #expect(storage.core.liveQueries.lostReadCount >= 1)
        writer.closeInput()
        await writer.waitForExit()
    }

    /// A change stream that misses another process's changes the log no longer names says so in the log (trial104:
    /// some 36,500 records of a 120,000-record batch never came, and nothing was logged).
    @Test func aChangeStreamThatMissesTrimmedChangesWarns() async throws {
        let directory = temporaryDirectory()
        let logger = RecordingLogger()
        var configuration = diskConfiguration(directory)
        configuration.externalChangePollInterval = .milliseconds(20)
        configuration.logger = logger
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(StressRecord.make(id: "first", sequence: 1))
        var changes = storage.changes(of: StressRecord.self).makeAsyncIterator()
        let writer = try HelperProcess(["overwrite-retention", directory.path, "10"], withInput: true)
        try await writer.waitForLine("ready") { $0 == "ready" }
        #expect(try await writer.ask("batch b 200 7") == "ok")
        #expect(try await writer.ask("save after 8") == "ok")
        // The batch's last entries (the log keeps ten) and the save come; the trimmed ones cannot.
        while let change = await changes.next() {
            if case .inserted(let record) = change, record.id == "after" { break }
        }
        let warned = logger.messages(at: .warning).contains { $0.hasPrefix("A change stream missed") }
        #expect(warned)
        #expect(storage.core.liveQueries.lostReadCount >= 1)
        writer.closeInput()
        await writer.waitForExit()
    }

    /// This process's own batch of more changes than the log keeps is no lost read: its commit names every record
    /// to this process's observers, so nothing reruns for a gap (review-88 #2: a poll between the commit and its
    /// publication took the trim mark past its position for lost entries, and reran every observed type).
    @Test func anOwnBatchLargerThanTheLogKeepsIsNoLostRead() async throws {
        var configuration = diskConfiguration(temporaryDirectory())
        configuration.changeLogRetention = 10
        // The data file's watch polls at each commit; timed polls count towards skipping an own commit the writer
        // has not published (20 of them), which a writer descheduled for 20 intervals on a loaded machine would
        // see: on a clock nobody advances, only the watch's polls run.
        configuration.externalChangePollInterval = .milliseconds(50)
        configuration.clock = VirtualClock()
        let storage = try LocalStorage(configuration: configuration)
        let (seen, watcher) = try await SequenceWatch.start(storage, id: "b50")
        defer { watcher.cancel() }
        for round in 1...20 {
            try await storage.save(contentsOf: (0..<200).map { StressRecord.make(id: "b\($0)", sequence: round) })
            try await eventually("round \(round) heard") { seen.last == round }
        }
        #expect(storage.core.liveQueries.lostReadCount == 0)
    }

    /// Another process's new expiry of one record wakes the watches of that record only: the change log's
    /// `touched` entry names it (review-87: untested).
    @Test func anotherProcesssNewExpiryWakesTheWatchOfItsRecordOnly() async throws {
        let (directory, storage) = try Self.pollingStore()
        for id in ["watched", "other"] { try await storage.save(StressRecord.make(id: id, sequence: 1)) }
        let schema = try await storage.core.schema(for: StressRecord.self)
        let watch = RecordWatch(core: storage.core, typeName: schema.name, id: "watched")
        defer { watch.end() }
        let other = RecordWatch(core: storage.core, typeName: schema.name, id: "other")
        defer { other.end() }
        let writer = try HelperProcess(["overwrite", directory.path], withInput: true)
        try await writer.waitForLine("ready") { $0 == "ready" }
        #expect(try await writer.ask("expire other 3600") == "ok")
        try await eventually("the other record's new expiry heard") { other.hasPendingChange }
        #expect(!watch.hasPendingChange)
        #expect(try await writer.ask("expire watched 3600") == "ok")
        try await eventually("the watched record's new expiry heard") { watch.hasPendingChange }
        writer.closeInput()
        await writer.waitForExit()
    }

    /// A watch of one record (a load's, `updates(of:id:)`'s) wakes for the writes of that record and of its whole
    /// type, not for another record's save or new expiry: a load in flight read its lease at every commit to its
    /// type (review-86 #14).
    @Test func aWatchOfOneRecordSleepsThroughAnotherRecordsWrites() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Product.sample(2))
        let schema = try await storage.core.schema(for: Product.self)
        let watch = RecordWatch(core: storage.core, typeName: schema.name, id: "sku_1")
        defer { watch.end() }
        for number in 2...6 { try await storage.save(Product.sample(number)) }
        try await storage.save(contentsOf: (7...9).map(Product.sample))
        try await storage.setExpiration(Product.self, id: "sku_2", .hours(1))
        try await storage.delete(Product.self, id: "sku_3")
        try await storage.delete(Product.self, id: "sku_none")
        #expect(!watch.hasPendingChange)
        try await storage.save(Product.sample(1))
        try await eventually("the record's save heard") { watch.hasPendingChange }
        await watch.waitForChange()
        try await storage.setExpiration(Product.self, id: "sku_1", .hours(2))
        try await eventually("the record's new expiry heard") { watch.hasPendingChange }
        await watch.waitForChange()
        try await storage.deleteAll(Product.self)
        try await eventually("the clear heard") { watch.hasPendingChange }
    }

    @Test func updatesStartWithNilAndEndWithNilWhenTheRecordExpires() async throws {
        let clock = VirtualClock()
        var configuration = LocalStorageConfiguration.inMemory
        configuration.clock = clock
        let storage = try LocalStorage(configuration: configuration)
        var values = storage.repository(Product.self).updates(id: "sku_1").makeAsyncIterator()
        let first = try await values.next()
        #expect(first == .some(nil))
        try await storage.save(Product.sample(1), expiration: .seconds(30))
        #expect(try await values.next() == Product.sample(1))
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(31))
        let expired = try await values.next()
        #expect(expired == .some(nil))
    }

    @Test func anInvalidIDEndsTheStreamWithAnError() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        var values = storage.updates(of: Product.self, id: "").makeAsyncIterator()
        await #expect(throws: LocalStorageError.self) { _ = try await values.next() }
    }
}

/// The sequences of the values `updates(of:id:)` of one `StressRecord` gives, noted as they come, from the first
/// (nil: no record yet) on.
private final class SequenceWatch: Sendable {
    private let seen = Mutex<[Int?]>([])

    /// Starts watching `id` in `storage`, once the first value came; cancel the task to stop.
    static func start(_ storage: LocalStorage, id: String) async throws -> (SequenceWatch, Task<Void, any Error>) {
        let watch = SequenceWatch()
        let task = Task {
            for try await value in storage.updates(of: StressRecord.self, id: id) { watch.note(value?.sequence) }
        }
        try await eventually("the first value") { watch.values == [nil] }
        return (watch, task)
    }

    private func note(_ sequence: Int?) { seen.withLock { $0.append(sequence) } }
    var values: [Int?] { seen.withLock { $0 } }
    var last: Int? { seen.withLock { $0.last ?? nil } }
}
