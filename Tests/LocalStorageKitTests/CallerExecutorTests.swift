import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

/// The thread this code runs on.
func currentThread() -> UInt { UInt(pthread_self()) }

/// A record that notes the thread it is decoded on: the thread the read that returned it ran on.
struct ThreadNotingRecord: LocalStorageIndexed {
    static let decodedOn = Mutex<[UInt]>([])
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
        ThreadNotingRecord.decodedOn.withLock { $0.append(thread) }
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
        let threads = ThreadNotingRecord.decodedOn.withLock { $0 }
        #expect(threads.count == 13)  // 1 + 3 + 2 + 2 + 1 + 1 + 1 + 2 rows
        #expect(threads.allSatisfy { $0 == caller }, "decoded on \(Set(threads).count) threads")
    }
}
