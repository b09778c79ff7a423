import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

/// The thread this code runs on.
func currentThread() -> UInt { UInt(pthread_self()) }

/// A record that notes the thread it is decoded on: the thread the read that returned it ran on.
struct ThreadNotingRecord: LocalStorageIndexed {
    static let decodedOn = Mutex<[(id: String, thread: UInt)]>([])
    static let encodedOn = Mutex<[(id: String, thread: UInt)]>([])
    let id: String
    var rank: Int

    init(id: String, rank: Int) {
        self.id = id
        self.rank = rank
    }

    enum CodingKeys: String, CodingKey { case id, rank }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        rank = try container.decode(Int.self, forKey: .rank)
        let thread = currentThread()
        ThreadNotingRecord.decodedOn.withLock { [id] in $0.append((id, thread)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(rank, forKey: .rank)
        let thread = currentThread()
        ThreadNotingRecord.encodedOn.withLock { [id] in $0.append((id, thread)) }
    }

    static var storageIndexes: [StorageIndex<Self>] { [.number("rank") { $0.rank }] }
}

/// Reads run on the caller's executor: from the main actor, no hop to another thread and back.
@Suite struct CallerExecutorTests {
    @MainActor @Test func readsFromTheMainActorDecodeOnIt() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<3).map { ThreadNotingRecord(id: "r\($0)", rank: $0) })
        ThreadNotingRecord.decodedOn.withLock { $0 = [] }
        let caller = currentThread()
        #expect(try await storage.fetch(ThreadNotingRecord.self, id: "r1")?.rank == 1)
        #expect(try await storage.fetch(ThreadNotingRecord.self).count == 3)
        #expect(try await storage.fetch(ThreadNotingRecord.self, matching: [.atLeast("rank", 1)]).count == 2)
        #expect(
            try await storage.page(
                ThreadNotingRecord.self, orderedBy: .descending("rank"), page: 1,
                pageSize: 2
            ).items.count == 2)
        #expect(try await storage.read { tx in try tx.fetch(ThreadNotingRecord.self, id: "r2") }?.rank == 2)
        // A load-through fetch that finds the record live, and a multi-get, are reads too.
        let loaded = try await storage.fetch(ThreadNotingRecord.self, id: "r0", expiration: .never) { _ in nil }
        #expect(loaded?.rank == 0)
        let policy = LoadPolicy(refreshAfter: .seconds(3_600))
        let repository = storage.repository(ThreadNotingRecord.self)
        #expect(try await repository.fetch(id: "r1", policy: policy) { _ in nil }?.rank == 1)
        #expect(try await storage.fetch(ThreadNotingRecord.self, ids: ["r0", "r2", "r9"]).count == 2)
        // The other tests of the suite read records too, at the same time: only these ids count.
        let threads = ThreadNotingRecord.decodedOn.withLock { $0 }.filter { $0.id.hasPrefix("r") }.map(\.thread)
        #expect(threads.count == 13)  // 1 + 3 + 2 + 2 + 1 + 1 + 1 + 2 rows
        #expect(threads.allSatisfy { $0 == caller }, "decoded on \(Set(threads).count) threads")
    }

    /// Writes hop once, to the writer: a save from an actor encodes its value on the actor's executor (no
    /// hop to the cooperative pool before the writer), and comes back to it. The actor runs on a thread of
    /// its own, so the thread tells the executor.
    @Test func aSaveFromAnActorEncodesOnItsExecutor() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let saver = ThreadBoundSaver()
        defer { saver.executor.stop() }
        let actorThread = await saver.thread()
        var returnedOn: [UInt] = []
        returnedOn.append(try await saver.save(ThreadNotingRecord(id: "w1", rank: 1), in: storage))
        returnedOn.append(try await saver.saveThroughRepository(ThreadNotingRecord(id: "w2", rank: 2), in: storage))
        returnedOn.append(try await saver.save(ThreadNotingRecord(id: "w1", rank: 3), in: storage))
        // The other test of the suite saves records too, at the same time: only these ids count.
        let threads = ThreadNotingRecord.encodedOn.withLock { $0 }.filter { $0.id.hasPrefix("w") }.map(\.thread)
        #expect(threads.count == 3)
        #expect(threads.allSatisfy { $0 == actorThread }, "encoded on \(Set(threads).count) threads")
        #expect(returnedOn.allSatisfy { $0 == actorThread })
        #expect(try await storage.fetch(ThreadNotingRecord.self, id: "w1")?.rank == 3)
    }

    /// `metadata` is a read like the others: it hopped to the pool and back on every call (it waits for the
    /// writer work reads in this process left behind, which it did off the caller's executor; trial61 #3).
    @Test func metadataFromAnActorStaysOnItsExecutor() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(ThreadNotingRecord(id: "m1", rank: 1))
        let reader = ThreadBoundSaver()
        defer { reader.executor.stop() }
        _ = try await reader.hopsReadingMetadata(of: "m1", in: storage, rounds: 1)  // The type is known.
        // 30 reads hopped 30 times; a read that finds a lock taken by another test's work may still suspend once
        // (more often on a loaded machine), so the bound is what a hop on every read of two kinds of three would pass.
        let hops = try await reader.hopsReadingMetadata(of: "m1", in: storage, rounds: 10)
        #expect(hops < 20, "\(hops) hops in 30 reads")
    }
}

/// An actor whose executor is one thread of its own.
actor ThreadBoundSaver {
    /// Reads metadata `rounds` times (of a record and of a missing id, also through a repository) and returns
    /// how many jobs its executor was given meanwhile: a read that hops off and back counts one each.
    func hopsReadingMetadata(of id: String, in storage: LocalStorage, rounds: Int) async throws -> Int {
        let before = executor.enqueuedCount
        let repository = storage.repository(ThreadNotingRecord.self)
        for _ in 0..<rounds {
            _ = try await storage.metadata(ThreadNotingRecord.self, id: id)
            _ = try await storage.metadata(ThreadNotingRecord.self, id: "missing")
            _ = try await repository.metadata(id: id)
        }
        return executor.enqueuedCount - before
    }

    let executor = ThreadExecutor(name: "saver", runsActor: true)
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    func thread() -> UInt { currentThread() }

    /// Saves `record` and returns the thread the actor resumed on.
    func save(_ record: ThreadNotingRecord, in storage: LocalStorage) async throws -> UInt {
        try await storage.save(record)
        return currentThread()
    }

    func saveThroughRepository(_ record: ThreadNotingRecord, in storage: LocalStorage) async throws -> UInt {
        try await storage.repository(ThreadNotingRecord.self).save(record, expiration: .hours(1))
        return currentThread()
    }
}
