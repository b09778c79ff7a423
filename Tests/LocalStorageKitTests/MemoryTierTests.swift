import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @_spi(Testing) @testable import LocalStorageKit

/// The memory tier (``MemoryCacheConfiguration``): hits skip the read and the decode, and no write by
/// any path of this or another process is ever missed.
@Suite struct MemoryTierTests {
    /// A store on disk with a memory tier.
    private func tieredStore(
        _ directory: URL = temporaryDirectory(), maxRecords: Int = 100,
        maxBytes: Int = 1 << 20,
        limits: StorageLimits? = nil, clock: VirtualClock? = nil
    ) throws -> LocalStorage {
        var configuration = diskConfiguration(directory)
        if let clock { configuration.clock = clock }
        configuration.memoryCache = MemoryCacheConfiguration(maxRecords: maxRecords, maxBytes: maxBytes)
        configuration.limits = limits
        return try LocalStorage(configuration: configuration)
    }

    private func tier(_ storage: LocalStorage) throws -> MemoryTier {
        try #require(storage.memoryTier)
    }

    // MARK: - Hits

    @Test func aHitSkipsTheReadAndTheDecode() async throws {
        let storage = try tieredStore()
        try await storage.save(Note(id: "n1", text: "one"))
        #expect(try await storage.fetch(Note.self, id: "n1") == Note(id: "n1", text: "one"))
        let decodes = storage.decodeCount
        for _ in 0..<5 {
            #expect(try await storage.fetch(Note.self, id: "n1") == Note(id: "n1", text: "one"))
        }
        #expect(storage.decodeCount == decodes)
        let tier = try tier(storage)
        #expect(tier.hits == 5)
        #expect(tier.misses == 1)
    }

    /// A load through the cache of a record the tier holds is a hit like a plain fetch's: it read and decoded
    /// the record from the store every time, and counted neither a hit nor a miss.
    @Test func aLoadThroughTheCacheOfAHeldRecordIsAHit() async throws {
        let storage = try tieredStore()
        try await storage.save(Note(id: "n1", text: "one"))
        let loads = CallCounter()
        @Sendable func load(_ id: String) -> Note? {
            loads.increment()
            return Note(id: id, text: "loaded")
        }
        #expect(try await storage.fetch(Note.self, id: "n1", expiration: .hours(1), load: load)?.text == "one")
        let decodes = storage.decodeCount
        for _ in 0..<5 {
            #expect(try await storage.fetch(Note.self, id: "n1", expiration: .hours(1), load: load)?.text == "one")
        }
        #expect(storage.decodeCount == decodes)
        let tier = try tier(storage)
        #expect(tier.hits == 5)
        #expect(tier.misses == 1)
        #expect(loads.value == 0)
        // A cold id still loads, once, and is then a hit too. (Not about timeouts: the suite's heaviest tests can
        // hold both cores for longer than the default 30 seconds of real time.)
        let patient = LoadPolicy(expiration: .hours(1), loadTimeout: .seconds(3_600))
        #expect(try await storage.fetch(Note.self, id: "n2", policy: patient, load: load)?.text == "loaded")
        #expect(try await storage.fetch(Note.self, id: "n2", policy: patient, load: load)?.text == "loaded")
        #expect(loads.value == 1)
        // A policy no load could use is refused as before, held record or not.
        await #expect(throws: LocalStorageError.self) {
            try await storage.fetch(Note.self, id: "n1", policy: LoadPolicy(loadTimeout: .zero), load: load)
        }
    }

    @Test func withoutATierEveryFetchDecodes() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        #expect(storage.memoryTier == nil)
        try await storage.save(Note(id: "n1", text: "one"))
        let decodes = storage.decodeCount
        for _ in 0..<3 { _ = try await storage.fetch(Note.self, id: "n1") }
        #expect(storage.decodeCount == decodes + 3)
    }

    @Test func missingRecordsAndInvalidIdsBehaveAsWithoutATier() async throws {
        let storage = try tieredStore()
        #expect(try await storage.fetch(Note.self, id: "absent") == nil)
        await #expect(throws: LocalStorageError.self) { try await storage.fetch(Note.self, id: "") }
        await #expect(throws: LocalStorageError.self) {
            try await storage.fetch(Note.self, id: String(repeating: "x", count: 600))
        }
    }

    @Test func idsAreTheirBytesNotCanonicallyEquivalentStrings() async throws {
        let storage = try tieredStore()
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)  // Equal as Strings, two records in the store.
        try await storage.save(Note(id: composed, text: "composed"))
        #expect(try await storage.fetch(Note.self, id: composed)?.text == "composed")
        #expect(try await storage.fetch(Note.self, id: decomposed) == nil)
        try await storage.save(Note(id: decomposed, text: "decomposed"))
        #expect(try await storage.fetch(Note.self, id: decomposed)?.text == "decomposed")
        #expect(try await storage.fetch(Note.self, id: composed)?.text == "composed")
        #expect(try await storage.fetch(Note.self, id: decomposed)?.text == "decomposed")
    }

    /// Another Swift type stored under the same name (a second view of the same records).
    private struct NoteTitle: LocalStorable, Equatable {
        static var storageName: String { "Note" }
        let id: String
        var text: String?
    }

    @Test func aValueHeldForOneTypeIsNotServedAsAnotherOfTheSameStorageName() async throws {
        let storage = try tieredStore()
        try await storage.save(Note(id: "n1", text: "one"))
        #expect(try await storage.fetch(Note.self, id: "n1") == Note(id: "n1", text: "one"))
        // The other type decodes the stored record; the value held for `Note` is not handed out as it.
        let decodes = storage.decodeCount
        #expect(try await storage.fetch(NoteTitle.self, id: "n1") == NoteTitle(id: "n1", text: "one"))
        #expect(storage.decodeCount == decodes + 1)
        #expect(try await storage.fetch(NoteTitle.self, id: "n1") == NoteTitle(id: "n1", text: "one"))
        #expect(try await storage.fetch(Note.self, id: "n1") == Note(id: "n1", text: "one"))
        #expect(storage.decodeCount == decodes + 2)
        let tier = try tier(storage)
        #expect(tier.hits == 1)
        #expect(tier.misses == 3)
    }

    @Test func boundsBelowOneFailTheOpen() throws {
        var configuration = diskConfiguration()
        configuration.memoryCache = MemoryCacheConfiguration(maxRecords: 0, maxBytes: 100)
        #expect(throws: LocalStorageError.self) { try LocalStorage(configuration: configuration) }
    }

    @Test func twoStoresOnOneDirectoryHaveTiersOfTheirOwn() async throws {
        let directory = temporaryDirectory()
        let tiered = try tieredStore(directory)
        let plain = try LocalStorage(configuration: diskConfiguration(directory))
        #expect(plain.memoryTier == nil)
        try await plain.save(Note(id: "n", text: "1"))
        #expect(try await tiered.fetch(Note.self, id: "n")?.text == "1")
        try await plain.save(Note(id: "n", text: "2"))
        #expect(try await tiered.fetch(Note.self, id: "n")?.text == "2")
        try await plain.delete(Note.self, id: "n")
        #expect(try await tiered.fetch(Note.self, id: "n") == nil)
    }

    // MARK: - Every write path invalidates

    /// A write of some path, applied to the record "a" (and its neighbours), with the value fetching "a"
    /// must give afterwards.
    struct WritePath: Sendable, CustomStringConvertible {
        let description: String
        let write: @Sendable (LocalStorage) async throws -> Void
        let expected: Note?
    }

    static let writePaths: [WritePath] = [
        WritePath(
            description: "save", write: { try await $0.save(Note(id: "a", text: "new")) },
            expected: Note(id: "a", text: "new")),
        WritePath(
            description: "save(contentsOf:)",
            write: {
                try await $0.save(contentsOf: [Note(id: "b", text: "b2"), Note(id: "a", text: "new")])
            }, expected: Note(id: "a", text: "new")),
        WritePath(description: "delete", write: { try await $0.delete(Note.self, id: "a") }, expected: nil),
        WritePath(description: "deleteAll", write: { try await $0.deleteAll(Note.self) }, expected: nil),
        WritePath(
            description: "update",
            write: {
                try await $0.update(Note.self, id: "a") { $0.text = "new" }
            }, expected: Note(id: "a", text: "new")),
        WritePath(
            description: "write { tx in }",
            write: {
                try await $0.write { tx in
                    try tx.delete(Note.self, id: "b")
                    try tx.save(Note(id: "a", text: "new"))
                }
            }, expected: Note(id: "a", text: "new")),
        WritePath(
            description: "setExpiration",
            write: {
                try await $0.setExpiration(Note.self, id: "a", .date(Date(timeIntervalSince1970: 1)))
            }, expected: nil),
        WritePath(
            description: "purgeExpired",
            write: { storage in
                // Expires "a" behind the tier's back in the raw store, logging nothing (the tier still holds it as
                // never expiring), then purges: only the purge's `.expired` entry can drop the held value.
                let schema = try await storage.core.schema(for: Note.self)
                try await storage.core.writer.perform { context in
                    let key = Array("a".utf8)
                    guard let bytes = try context.txn.get(schema.records, key: key) else { return }
                    let view = try RecordDecoding.view(of: bytes, Note.self, id: "a")
                    var header = try view.header(in: schema, txn: context.txn)
                    header.expiresAt = 1
                    try RecordWriter.replaceHeader(of: view, with: header, key: key, schema: schema, txn: context.txn)
                }
                try await storage.purgeExpired()
            }, expected: nil),
    ]

    @Test(arguments: writePaths)
    func aWriteInvalidatesTheValue(_ path: WritePath) async throws {
        let storage = try tieredStore()
        try await storage.save(contentsOf: [Note(id: "a", text: "old"), Note(id: "b", text: "b")])
        _ = try await storage.fetch(Note.self, id: "a")
        #expect(try await storage.fetch(Note.self, id: "a") == Note(id: "a", text: "old"))
        let tier = try tier(storage)
        #expect(tier.hits == 1)
        try await path.write(storage)
        #expect(try await storage.fetch(Note.self, id: "a") == path.expected)
        #expect(tier.hits == 1)
    }

    @Test func anEvictionInvalidatesTheValue() async throws {
        let storage = try tieredStore(limits: StorageLimits(maxRecords: 2))
        try await storage.save(Note(id: "a", text: "old"))
        try await storage.save(Note(id: "b", text: "b"))
        #expect(try await storage.fetch(Note.self, id: "a")?.text == "old")
        // "a" was read most recently in memory, but the store's recency is folded only at the next commit,
        // which also evicts: make "b" the more recent by writing it again.
        try await storage.save(Note(id: "b", text: "b2"))
        try await storage.save(Note(id: "c", text: "c"))
        let stored = try await storage.count(Note.self)
        #expect(stored == 2)
        let a = try await storage.fetch(Note.self, id: "a")
        let metadata = try await storage.metadata(Note.self, id: "a")
        #expect((a == nil) == (metadata == nil))
        #expect(storage.core.evictions.total >= 1)
    }

    @Test func anImportInvalidatesTheValue() async throws {
        let directory = temporaryDirectory()
        let storage = try tieredStore(directory)
        try await storage.save(Note(id: "a", text: "exported"))
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        var exported = Data()
        _ = try maintenance.export(to: { exported.append($0) })
        let file = directory.appendingPathComponent("export.jsonl")
        try exported.write(to: file)
        try await storage.save(Note(id: "a", text: "newer"))
        #expect(try await storage.fetch(Note.self, id: "a")?.text == "newer")
        #expect(try await storage.fetch(Note.self, id: "a")?.text == "newer")
        _ = try await maintenance.importRecords(from: file)
        #expect(try await storage.fetch(Note.self, id: "a")?.text == "exported")
    }

    // MARK: - Expiry

    @Test func anExpiredValueIsNotServed() async throws {
        let storage = try tieredStore()
        let expiresAt = Date().addingTimeInterval(3600)
        try await storage.save(Note(id: "e", text: "soon"), expiration: .date(expiresAt))
        #expect(try await storage.fetch(Note.self, id: "e")?.text == "soon")
        let tier = try tier(storage)
        let key = MemoryTier.Key(type: try await storage.core.schema(for: Note.self).number, id: "e")
        let expiry = EpochNanoseconds.nanoseconds(from: expiresAt)
        let held = { (now: Int64) in
            tier.held(Note.self, for: key, now: now, countingMiss: true).flatMap {
                MemoryTier.unwrap($0, as: Note.self)
            }
        }
        #expect(held(expiry - 1) == Note(id: "e", text: "soon"))
        #expect(held(expiry) == nil)
        // Dropped once found expired.
        #expect(tier.count == 0)
    }

    @Test func aRecordThatExpiresWhileHeldIsNotServed() async throws {
        let clock = VirtualClock()
        let storage = try tieredStore(clock: clock)
        try await storage.save(Note(id: "e", text: "soon"), expiration: .seconds(0.3))
        #expect(try await storage.fetch(Note.self, id: "e")?.text == "soon")  // read and held
        #expect(try await storage.fetch(Note.self, id: "e")?.text == "soon")  // served by the tier
        let hits = try tier(storage).hits
        #expect(hits >= 1)
        clock.advance(by: .milliseconds(301))  // past the expiry (the save was a few nanoseconds after the start)
        #expect(try await storage.fetch(Note.self, id: "e") == nil)
        #expect(try tier(storage).hits == hits)
    }

    // MARK: - Bounds

    @Test func theTierHoldsAtMostMaxRecordsLeastRecentlyUsedOut() async throws {
        let storage = try tieredStore(maxRecords: 3)
        try await storage.save(contentsOf: (0..<5).map { Note(id: "n\($0)", text: "\($0)") })
        let tier = try tier(storage)
        for n in 0..<3 { _ = try await storage.fetch(Note.self, id: "n\(n)") }
        _ = try await storage.fetch(Note.self, id: "n0")  // n0 is now the most recent; n1 the least
        _ = try await storage.fetch(Note.self, id: "n3")  // evicts n1
        #expect(tier.count == 3)
        let decodes = storage.decodeCount
        for n in [0, 2, 3] { _ = try await storage.fetch(Note.self, id: "n\(n)") }
        #expect(storage.decodeCount == decodes)
        _ = try await storage.fetch(Note.self, id: "n1")
        #expect(storage.decodeCount == decodes + 1)
        for n in 0..<5 { _ = try await storage.fetch(Note.self, id: "n\(n)") }
        #expect(tier.count <= 3)
    }

    /// A hit moves a value to the head only when it is not in the tier's most recent quarter already; a value
    /// just fetched still outlives the next three quarters of the tier's fetches of other ids (random fetches
    /// against that bound; with hits never moving values, or moving only those past the middle, it fails).
    @Test func aValueJustFetchedOutlivesThreeQuartersOfTheTier() async throws {
        let size = 40
        let storage = try tieredStore(maxRecords: size)
        try await storage.save(contentsOf: (0..<200).map { Note(id: "n\($0)", text: "\($0)") })
        let tier = try tier(storage)
        let schema = try await storage.core.schema(for: Note.self)
        var random = SplitMix64(seed: 29)
        var recent: [Int] = []
        for step in 0..<3_000 {
            // Mostly a hot fifth of the ids, so that hits (the ones that may skip the move) dominate.
            let n = random.next() % 4 == 0 ? Int(random.next() % 200) : Int(random.next() % 40)
            _ = try await storage.fetch(Note.self, id: "n\(n)")
            // The ids of the last three quarters of a tier's fetches: the fetch of each one left it at most a
            // quarter of the tier from the head, and every fetch since moved it back one place at most.
            recent.append(n)
            if recent.count > size * 3 / 4 { recent.removeFirst() }
            for held in Set(recent) {
                #expect(
                    tier.holds(MemoryTier.Key(type: schema.number, id: "n\(held)")),
                    "step \(step): n\(held), fetched within the last \(size * 3 / 4) fetches, was dropped")
            }
            #expect(tier.count <= size)
        }
        #expect(tier.hits > 1_000)
    }

    @Test func theTierHoldsAtMostMaxBytesOfPayload() async throws {
        let storage = try tieredStore(maxBytes: 1_000)
        let notes = (0..<20).map { Note(id: "n\($0)", text: String(repeating: "x", count: 100 + $0 * 10)) }
        try await storage.save(contentsOf: notes)
        let tier = try tier(storage)
        for note in notes {
            #expect(try await storage.fetch(Note.self, id: note.id) == note)
            #expect(tier.bytes <= 1_000)
        }
        #expect(tier.count >= 1)
        var sizes = 0
        for note in notes.suffix(tier.count) {
            sizes += try #require(try await storage.metadata(Note.self, id: note.id)).sizeInBytes
        }
        #expect(sizes == tier.bytes)
        // A payload larger than the whole tier is never kept.
        try await storage.save(Note(id: "big", text: String(repeating: "y", count: 2_000)))
        _ = try await storage.fetch(Note.self, id: "big")
        _ = try await storage.fetch(Note.self, id: "big")
        #expect(tier.bytes <= 1_000)
        let decodes = storage.decodeCount
        _ = try await storage.fetch(Note.self, id: "big")
        #expect(storage.decodeCount == decodes + 1)
    }

    // MARK: - A random workload against a model

    @Test func randomWritesNeverLeaveAStaleValue() async throws {
        let directory = temporaryDirectory()
        let storage = try tieredStore(directory, maxRecords: 8)
        let other = try LocalStorage(configuration: diskConfiguration(directory))
        var generator = SplitMix64(seed: 15)
        var model: [String: Note] = [:]
        for step in 0..<600 {
            let id = "n\(generator.next() % 12)"
            let writer = generator.next() % 2 == 0 ? storage : other
            switch generator.next() % 10 {
            case 0:
                try await writer.delete(Note.self, id: id)
                model[id] = nil
            case 1 where step % 7 == 0:
                try await writer.deleteAll(Note.self)
                model.removeAll()
            case 2:
                let note = Note(id: id, text: "u\(step)")
                try await writer.write { tx in try tx.save(note) }
                model[id] = note
            case 3, 4, 5:
                let note = Note(id: id, text: "s\(step)")
                try await writer.save(note)
                model[id] = note
            default:
                break
            }
            #expect(try await storage.fetch(Note.self, id: id) == model[id], "step \(step)")
            let probe = "n\(generator.next() % 12)"
            #expect(try await storage.fetch(Note.self, id: probe) == model[probe], "step \(step)")
        }
        #expect(try tier(storage).hits > 0)
    }

    // MARK: - Another process

    /// Another process writes new values of the same ids while this process reads at once after each of
    /// its writes returns: never the value from before.
    @Test func writesOfAnotherProcessAreNeverMissed() async throws {
        let directory = temporaryDirectory()
        let storage = try tieredStore(directory, maxRecords: 16)
        let ids = (0..<6).map { "x-\($0)" }
        try await storage.save(contentsOf: ids.map { StressRecord.make(id: $0, sequence: 0) })
        var expected = Dictionary(uniqueKeysWithValues: ids.map { ($0, Optional(0)) })
        let helper = try HelperProcess(["overwrite", directory.path], withInput: true)
        try await helper.waitForLine("ready") { $0 == "ready" }
        let rounds = environmentInteger("LSK_MEMORY_TIER_ROUNDS", default: 300)
        var stale = 0
        var generator = SplitMix64(seed: 7)
        for round in 1...rounds {
            let id = ids[Int(generator.next() % UInt64(ids.count))]
            // Warm the tier: the second fetch is a hit.
            for _ in 0..<2 {
                #expect(try await storage.fetch(StressRecord.self, id: id)?.sequence == expected[id] ?? nil)
            }
            let command: String
            switch generator.next() % 20 {
            case 0:
                command = "delete \(id)"
                expected[id] = .some(nil)
            case 1:
                command = "clear"
                for key in ids { expected[key] = .some(nil) }
            default:
                command = "save \(id) \(round)"
                expected[id] = round
            }
            let reply = try await helper.ask(command)
            try #require(reply == "ok", "\(command): \(reply)")
            let read = try await storage.fetch(StressRecord.self, id: id)
            if read?.sequence != expected[id] ?? nil { stale += 1 }
        }
        helper.closeInput()
        await helper.waitForExit()
        #expect(stale == 0, "\(stale) of \(rounds) reads right after another process's write were stale")
        #expect(try tier(storage).hits >= rounds / 2)
    }
}
