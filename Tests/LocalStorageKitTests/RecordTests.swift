import CLMDB
import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

@Suite struct RecordTests {
    @Test func savedProductRoundTrips() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let product = Product.sample(108)
        try await storage.save(product, expiration: .hours(2))
        let fetched = try await storage.fetch(Product.self, id: "sku_108")
        #expect(fetched == product)
        #expect(try await storage.fetch(Product.self, id: "missing") == nil)
    }

    @Test func repositoryMirrorsTheStore() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let repository = storage.repository(User.self)
        try await repository.save(User.mock)
        let fetched = try await repository.fetch(id: User.mock.id)
        #expect(fetched?.name == User.mock.name)
        #expect(try await repository.count() == 1)
        try await repository.delete(id: User.mock.id)
        #expect(try await repository.fetch(id: User.mock.id) == nil)
        #expect(try await repository.count() == 0)
    }

    @Test func modelsWithIntegerIDsUseTheirOwnIDType() async throws {
        struct Ticket: LocalStorable, Equatable {
            let id: Int
            var title: String
        }
        let storage = try LocalStorage(configuration: .inMemory)
        let repository = storage.repository(Ticket.self)
        try await repository.save(Ticket(id: 42, title: "answer"))
        #expect(try await repository.fetch(id: 42)?.title == "answer")
        #expect(try await storage.fetch(Ticket.self, id: 42)?.title == "answer")
        #expect(try await storage.fetch(Ticket.self, id: "42")?.title == "answer")
        #expect(try await repository.metadata(id: 42) != nil)
        try await storage.delete(Ticket.self, id: 42)
        #expect(try await repository.fetch(id: 42) == nil)
    }

    @Test func resavingKeepsCreatedAtAndMovesUpdatedAt() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        var note = Note(id: "n1", text: "first")
        try await storage.save(note, expiration: .hours(1))
        let first = try #require(try await storage.metadata(Note.self, id: "n1"))
        note.text = "second"
        try await storage.save(note, expiration: .never)
        let second = try #require(try await storage.metadata(Note.self, id: "n1"))
        #expect(second.createdAt == first.createdAt)
        #expect(second.updatedAt > first.updatedAt)
        #expect(first.expiresAt != nil)
        #expect(second.expiresAt == nil)
        #expect(try await storage.fetch(Note.self, id: "n1")?.text == "second")
    }

    @Test func metadataDescribesTheRecord() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var configuration = LocalStorageConfiguration.inMemory
        configuration.clock = VirtualClock(start: start)
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "n", text: "hello"), expiration: .minutes(15))
        let meta = try #require(try await storage.metadata(Note.self, id: "n"))
        // The store's clock stands still: the save's time is its start (the writer adds a nanosecond
        // per batch to keep timestamps increasing).
        #expect(abs(meta.createdAt.timeIntervalSince(start)) < 0.001)
        #expect(meta.createdAt == meta.updatedAt)
        let expiresAt = try #require(meta.expiresAt)
        #expect(abs(expiresAt.timeIntervalSince(meta.createdAt) - 900) < 0.001)
        #expect(
            meta.sizeInBytes == (try JSONEncoder().encode(Note(id: "n", text: "hello"))).count
                || storage.configuration.codec == .binary)
        #expect(meta.sizeInBytes > 0)
        #expect(!meta.isExpired)
        #expect(meta.version == 1)
        #expect(try await storage.metadata(Note.self, id: "other") == nil)
    }

    @Test func expiredRecordsAreInvisibleExceptToMetadata() async throws {
        let clock = VirtualClock()
        var configuration = LocalStorageConfiguration.inMemory
        configuration.clock = clock
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "old", text: "x"), expiration: .date(Date().addingTimeInterval(-1)))
        try await storage.save(Note(id: "live", text: "z"), expiration: .days(7))
        #expect(try await storage.fetch(Note.self, id: "old") == nil)
        #expect(try await storage.count(Note.self) == 1)
        try await storage.save(Note(id: "soon", text: "y"), expiration: .seconds(0.2))
        #expect(try await storage.fetch(Note.self, id: "soon") != nil)
        clock.advance(by: .milliseconds(199))
        #expect(try await storage.count(Note.self) == 2)
        clock.advance(by: .milliseconds(2))
        #expect(try await storage.fetch(Note.self, id: "soon") == nil)
        #expect(try await storage.fetch(Note.self, options: FetchOptions()).map(\.id) == ["live"])
        #expect(try await storage.fetch(Note.self, options: FetchOptions(sort: .newestFirst)).map(\.id) == ["live"])
        #expect(try await storage.count(Note.self) == 1)
        let meta = try #require(try await storage.metadata(Note.self, id: "old"))
        #expect(meta.isExpired)
        #expect(try await storage.purgeExpired() == 2)
        #expect(try await storage.metadata(Note.self, id: "old") == nil)
        #expect(try await storage.purgeExpired() == 0)
    }

    @Test func fetchWithPurgeExpiredDeletesWhatItMeets() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Note(id: "a", text: "x"), expiration: .date(Date().addingTimeInterval(-5)))
        try await storage.save(Note(id: "b", text: "y"))
        let rows = try await storage.fetch(Note.self, options: FetchOptions(purgeExpired: true))
        #expect(rows.map(\.id) == ["b"])
        #expect(try await storage.metadata(Note.self, id: "a") == nil)
    }

    /// Every kind of read hands its purge to the writer and returns (ReadPathTests), and a `metadata` call
    /// after it no longer shows the record: it waits for what reads queued before it (it used to show the
    /// expired record until the writer's next commit).
    @Test func metadataAfterAnyPurgingReadShowsThePurge() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.autoPurgeExpiredOnRead = true
        let storage = try LocalStorage(configuration: configuration)
        let past = CacheExpiration.date(Date().addingTimeInterval(-5))
        try await storage.save(contentsOf: (0..<5).map { Note(id: "n\($0)", text: "") }, expiration: past)
        try await storage.save(contentsOf: (0..<3).map(Product.sample), expiration: past)
        try await storage.save(Product.sample(3))

        #expect(try await storage.fetch(Note.self, id: "n0") == nil)
        #expect(try await storage.metadata(Note.self, id: "n0") == nil)
        #expect(try await storage.fetch(Note.self, ids: ["n1"]).isEmpty)
        #expect(try await storage.metadata(Note.self, id: "n1") == nil)
        #expect(try await storage.read { tx in try tx.fetch(Note.self, id: "n2") } == nil)
        #expect(try await storage.metadata(Note.self, id: "n2") == nil)
        #expect(try await storage.repository(Note.self).fetch(id: "n3") == nil)
        #expect(try await storage.metadata(Note.self, id: "n3") == nil)
        #expect(try await storage.fetch(Note.self).isEmpty)
        #expect(try await storage.metadata(Note.self, id: "n4") == nil)
        let rows = try await storage.fetch(Product.self, matching: [.atLeast("price", 0)])
        #expect(rows.map(\.id) == ["sku_3"])
        for n in 0..<3 { #expect(try await storage.metadata(Product.self, id: "sku_\(n)") == nil) }
    }

    @Test func autoPurgeOnReadDeletesExpiredRecords() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.autoPurgeExpiredOnRead = true
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "a", text: "x"), expiration: .date(Date().addingTimeInterval(-5)))
        #expect(try await storage.fetch(Note.self, id: "a") == nil)
        #expect(try await storage.metadata(Note.self, id: "a") == nil)
    }

    @Test func newestFirstPagesByUpdateTime() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        for n in 0..<30 {
            try await storage.save(Note(id: String(format: "n%02d", (n * 7) % 30), text: "\(n)"))
        }
        let order = (0..<30).map { String(format: "n%02d", ($0 * 7) % 30) }
        let newest = try await storage.fetch(Note.self, options: FetchOptions(limit: 10, offset: 5, sort: .newestFirst))
        #expect(newest.map(\.id) == Array(order.reversed()[5..<15]))
        let oldest = try await storage.fetch(Note.self, options: FetchOptions(limit: 4, sort: .oldestFirst))
        #expect(oldest.map(\.id) == Array(order[0..<4]))
        let byID = try await storage.fetch(Note.self, options: FetchOptions(limit: 3, offset: 28))
        #expect(byID.map(\.id) == ["n28", "n29"])
        // Re-saving moves a record to the front.
        try await storage.save(Note(id: "n00", text: "again"))
        #expect(
            try await storage.fetch(Note.self, options: FetchOptions(limit: 1, sort: .newestFirst)).first?.id == "n00")
        #expect(try await storage.fetch(Note.self, options: FetchOptions(limit: 0)).isEmpty)
        await #expect(throws: LocalStorageError.self) {
            try await storage.fetch(Note.self, options: FetchOptions(limit: -1))
        }
    }

    @Test func deleteAllAndMissingDeletes() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<50).map { Note(id: "n\($0)", text: "t") })
        try await storage.delete(Note.self, id: "nope")
        #expect(try await storage.count(Note.self) == 50)
        try await storage.deleteAll(Note.self)
        #expect(try await storage.count(Note.self) == 0)
        #expect(try await storage.fetch(Note.self, options: FetchOptions(sort: .newestFirst)).isEmpty)
    }

    @Test func saveContentsOfIsOneTransactionAndLastValueWins() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Note(id: "warm-up", text: ""))
        let before = storage.commitCount
        try await storage.save(contentsOf: [
            Note(id: "a", text: "1"), Note(id: "b", text: "2"), Note(id: "a", text: "3"),
        ])
        #expect(storage.commitCount - before == 1)
        #expect(try await storage.fetch(Note.self, id: "a")?.text == "3")
        #expect(try await storage.count(Note.self) == 3)
    }

    /// A batch large enough to be encoded in chunks by several tasks keeps its order (the last value of a
    /// repeated id wins, across chunks), and a batch with records that fail to encode throws the first one's
    /// error and writes nothing.
    @Test func aLargeBatchEncodedInChunksKeepsItsOrderAndItsFirstError() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let count = LocalStorage.preparationChunk * 4 + 17
        var notes = (0..<count).map { Note(id: "n\($0 % (count - 100))", text: "\($0)") }
        try await storage.save(contentsOf: notes)
        #expect(try await storage.count(Note.self) == count - 100)
        // Ids n0…n99 came again at the end, in the last chunk: their last values won.
        #expect(try await storage.fetch(Note.self, id: "n5")?.text == "\(count - 100 + 5)")
        #expect(try await storage.fetch(Note.self, id: "n200")?.text == "200")

        notes[count - 10] = Note(id: "", text: "late")
        notes[LocalStorage.preparationChunk + 3] = Note(id: String(repeating: "x", count: 600), text: "early")
        await #expect {
            try await storage.save(contentsOf: notes.map { Note(id: $0.id, text: "changed") })
        } throws: { error in
            guard case LocalStorageError.invalidId(let reason) = error else { return false }
            return reason.contains("this one has 600")  // the long id, not the empty one after it
        }
        #expect(try await storage.fetch(Note.self, id: "n200")?.text == "200")
    }

    @Test func setExpirationAndUpdateNeedAnExistingRecord() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        await #expect(throws: LocalStorageError.notFound(id: "x")) {
            try await storage.setExpiration(Note.self, id: "x", .hours(1))
        }
        await #expect(throws: LocalStorageError.notFound(id: "x")) {
            try await storage.update(Note.self, id: "x") { $0.text = "never" }
        }
        try await storage.save(Note(id: "x", text: "a"), expiration: .hours(1))
        let updated = try await storage.update(Note.self, id: "x") { $0.text += "b" }
        #expect(updated.text == "ab")
        #expect(try await storage.fetch(Note.self, id: "x")?.text == "ab")
        #expect(try await storage.metadata(Note.self, id: "x")?.expiresAt != nil)
        try await storage.setExpiration(Note.self, id: "x", .never)
        #expect(try await storage.metadata(Note.self, id: "x")?.expiresAt == nil)
        try await storage.setExpiration(Note.self, id: "x", .date(Date().addingTimeInterval(-1)))
        #expect(try await storage.fetch(Note.self, id: "x") == nil)
        #expect(try await storage.purgeExpired() == 1)
    }

    @Test func aFailingRequestFailsAloneInItsBatch() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration(durability: .full))
        try await storage.save(Note(id: "warm-up", text: ""))
        let failures = try await withThrowingTaskGroup(of: Bool.self) { group in
            for n in 0..<200 {
                group.addTask {
                    if n % 10 == 0 {
                        do {
                            try await storage.update(Note.self, id: "missing\(n)") { $0.text = "never" }
                            return false
                        } catch LocalStorageError.notFound {
                            return true
                        }
                    }
                    try await storage.save(Note(id: "n\(n)", text: "\(n)"))
                    return false
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(failures == 20)
        #expect(try await storage.count(Note.self) == 181)
        #expect(try await storage.fetch(Note.self, id: "missing10") == nil)
        #expect(try await storage.fetch(Note.self, id: "n11")?.text == "11")
    }

    @Test func updateThatThrowsWritesNothing() async throws {
        struct Refused: Error {}
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Note(id: "x", text: "a"))
        await #expect(throws: Refused.self) {
            try await storage.update(Note.self, id: "x") { note in
                note.text = "changed"
                throw Refused()
            }
        }
        #expect(try await storage.fetch(Note.self, id: "x")?.text == "a")
    }

    @Test(arguments: ["", String(repeating: "x", count: 512), String(repeating: "é", count: 300)])
    func badIDsAreRejected(id: String) async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        await #expect(throws: LocalStorageError.self) { try await storage.save(Note(id: id, text: "t")) }
        await #expect(throws: LocalStorageError.self) { try await storage.fetch(Note.self, id: id) }
    }

    @Test func longestIDFits() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let id = String(repeating: "k", count: 511)
        try await storage.save(Product(id: id, title: "t", category: "c", price: 1, rating: 2))
        #expect(try await storage.fetch(Product.self, id: id)?.id == id)
    }

    @Test func payloadOfAnotherTypeFailsToDecode() async throws {
        struct Other: LocalStorable {
            let id: String
            var count: Int
            static var storageName: String { "Note" }
        }
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Note(id: "n", text: "t"))
        await #expect {
            try await storage.fetch(Other.self, id: "n")
        } throws: { error in
            guard case LocalStorageError.decodingFailed(let reason) = error else { return false }
            return reason.contains("\"n\"") && reason.contains("Other")
        }
    }

    @Test func persistsAcrossCloseAndReopen() async throws {
        let directory = temporaryDirectory()
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory, durability: .full))
            try await storage.save(contentsOf: (0..<100).map { Product.sample($0) }, expiration: .days(1))
        }
        let reopened = try LocalStorage(configuration: diskConfiguration(directory))
        #expect(try await reopened.count(Product.self) == 100)
        #expect(try await reopened.fetch(Product.self, id: "sku_7") == Product.sample(7))
    }

    @Test func twoStoresOnOneDirectoryShareTheEnvironment() async throws {
        let directory = temporaryDirectory()
        let first = try LocalStorage(configuration: diskConfiguration(directory))
        let second = try LocalStorage(configuration: diskConfiguration(directory))
        #expect(first.core === second.core)
        try await first.save(Note(id: "a", text: "shared"))
        #expect(try await second.fetch(Note.self, id: "a")?.text == "shared")
        let memoryA = try LocalStorage(configuration: .inMemory)
        let memoryB = try LocalStorage(configuration: .inMemory)
        #expect(memoryA.core !== memoryB.core)
    }

    @Test func inMemoryDirectoryIsGoneWhileOpenAndAfterClose() async throws {
        var directory: URL?
        do {
            let storage = try LocalStorage(configuration: .inMemory)
            try await storage.save(Note(id: "a", text: "t"))
            directory = storage.core.directory
            // Unlinked once open (see InMemoryStoreTests): nothing to leave behind however the process ends.
            #expect(!FileManager.default.fileExists(atPath: storage.core.directory.path))
            #expect(try await storage.fetch(Note.self, id: "a")?.text == "t")
        }
        let path = try #require(directory).path
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func concurrentSavesAreGroupCommitted() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration(durability: .full))
        try await storage.save(Note(id: "warm-up", text: ""))
        let before = storage.commitCount
        // All 1,000 wait behind a held writer, however the machine schedules the tasks that send them.
        let hold = try await WriterHold(storage)
        let saves = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<1000 { group.addTask { try await storage.save(Note(id: "n\(n)", text: "\(n)")) } }
                try await group.waitForAll()
            }
        }
        try await waitUntil("1,000 saves are queued") { storage.core.writer.queuedCount >= 1000 }
        try await hold.release()
        try await saves.value
        let commits = storage.commitCount - before
        #expect(try await storage.count(Note.self) == 1001)
        #expect(commits < 100, "1,000 concurrent saves took \(commits) commits")
    }

    @Test func concurrentWritersAndReadersSeeExactCounts() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for n in 0..<250 { try await storage.save(Product.sample(writer * 250 + n)) }
                }
            }
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<100 {
                        let count = try await storage.count(Product.self)
                        #expect((0...2000).contains(count))
                        _ = try await storage.fetch(Product.self, id: "sku_1")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await storage.count(Product.self) == 2000)
        for n in stride(from: 0, to: 2000, by: 97) {
            #expect(try await storage.fetch(Product.self, id: "sku_\(n)") == Product.sample(n))
        }
    }

    @Test func mapGrowsFromATinyMap() async throws {
        var configuration = diskConfiguration()
        configuration.mapSize = 64 * 1024
        configuration.maxMapSize = 64 << 20
        configuration.growsMapFromMapSize = true
        let storage = try LocalStorage(configuration: configuration)
        let text = String(repeating: "x", count: 2000)
        try await storage.save(contentsOf: (0..<3000).map { Note(id: "n\($0)", text: text) })
        #expect(try await storage.count(Note.self) == 3000)
        #expect(storage.core.environment.currentMapSize > 64 * 1024)
    }

    @Test func fullMapThrowsStorageFullAndKeepsCommittedData() async throws {
        var configuration = diskConfiguration()
        configuration.mapSize = 256 * 1024
        configuration.maxMapSize = 1 << 20
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "kept", text: "safe"))
        let text = String(repeating: "y", count: 4000)
        await #expect(throws: LocalStorageError.storageFull) {
            try await storage.save(contentsOf: (0..<1000).map { Note(id: "big\($0)", text: text) })
        }
        #expect(try await storage.fetch(Note.self, id: "kept")?.text == "safe")
        #expect(try await storage.count(Note.self) == 1)
        try await storage.save(Note(id: "small", text: "fits"))
        #expect(try await storage.count(Note.self) == 2)
    }
}
