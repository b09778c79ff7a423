import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// One commit's evictions walk past the records it wrote once, not once for each eviction (review-94 #1: under
/// the adaptive policy, whose window holds a new batch, 4,000 new records into a full store of 4,000 took 17 s in a
/// debug build; a batch larger than its limit was quadratic under every policy). Counted in entries the walks pass
/// over, never in time.
@Suite struct EvictionRunTests {
    static let size = 2_000

    func store(limit: Int, policy: StorageEvictionPolicy) throws -> LocalStorage {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.limits = StorageLimits(maxRecords: limit)
        configuration.evictionPolicy = policy
        return try LocalStorage(configuration: configuration)
    }

    func ids(of storage: LocalStorage) async throws -> Set<String> {
        Set(try await storage.fetch(StressRecord.self).map(\.id))
    }

    /// A batch as large as the limit into a full store replaces every record, in entries proportional to it.
    @Test(arguments: StorageEvictionPolicy.allCases)
    func aBatchIntoAFullStoreReplacesItInOneWalk(policy: StorageEvictionPolicy) async throws {
        let n = Self.size
        let storage = try store(limit: n, policy: policy)
        try await storage.save(contentsOf: (0..<n).map { StressRecord.make(id: "old-\($0)", sequence: $0) })
        let walkedBefore = storage.core.evictions.walked
        try await storage.save(contentsOf: (0..<n).map { StressRecord.make(id: "new-\($0)", sequence: $0) })
        #expect(try await ids(of: storage) == Set((0..<n).map { "new-\($0)" }))
        let walked = storage.core.evictions.walked - walkedBefore
        // Each of the n walks passed the whole batch before (n² = 4,000,000 entries); now a few times n.
        #expect(walked <= 4 * n, "\(walked) entries passed for \(n) evictions")
    }

    /// A batch larger than the limit keeps the limit among its own records, in entries proportional to it.
    @Test(arguments: StorageEvictionPolicy.allCases)
    func aBatchLargerThanTheLimitKeepsItInOneWalk(policy: StorageEvictionPolicy) async throws {
        let n = Self.size
        let storage = try store(limit: n / 2, policy: policy)
        try await storage.save(contentsOf: (0..<10).map { StressRecord.make(id: "old-\($0)", sequence: $0) })
        let walkedBefore = storage.core.evictions.walked
        try await storage.save(contentsOf: (0..<n).map { StressRecord.make(id: "new-\($0)", sequence: $0) })
        let kept = try await ids(of: storage)
        #expect(kept.count == n / 2)
        #expect(kept.allSatisfy { $0.hasPrefix("new-") })
        let walked = storage.core.evictions.walked - walkedBefore
        #expect(walked <= 4 * n, "\(walked) entries passed for \(n / 2 + 10) evictions")
    }

    /// Half a store's worth of new records evicts the old records the policy ranks first, as before.
    @Test func aSmallerBatchEvictsTheLeastRecentlyUsedOfTheOthers() async throws {
        let n = Self.size
        let storage = try store(limit: n, policy: .leastRecentlyUsed)
        try await storage.save(contentsOf: (0..<n).map { StressRecord.make(id: "old-\($0)", sequence: $0) })
        try await storage.save(contentsOf: (0..<n / 2).map { StressRecord.make(id: "new-\($0)", sequence: $0) })
        // One batch's records are used in the order of their keys (their ids' bytes): the first half of them goes.
        let old = (0..<n).map { "old-\($0)" }.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let expected = Set(old.dropFirst(n / 2) + (0..<n / 2).map { "new-\($0)" })
        #expect(try await ids(of: storage) == expected)
    }
}

/// Reads noted for eviction place each record once per fold (review-94 #2: a record read 4,096 times between folds
/// was moved in the eviction order 4,096 times): at its last read under least recently used, and a run of reads of
/// it in a row under the adaptive policy (whose reference model takes reads of others in between in order).
@Suite struct FoldedReadTests {
    func store(_ policy: StorageEvictionPolicy) async throws -> LocalStorage {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.limits = StorageLimits(maxRecords: 10)
        configuration.evictionPolicy = policy
        let storage = try LocalStorage(configuration: configuration)
        for n in 0..<10 { try await storage.save(StressRecord.make(id: "r\(n)", sequence: n)) }
        return storage
    }

    /// Reads `order` (record numbers), saves r10 (the fold, and one eviction), and returns how many reads were
    /// folded and records placed, and the records kept.
    func fold(_ order: [Int], in storage: LocalStorage) async throws -> (reads: Int, placed: Int, kept: Set<String>) {
        let before = storage.core.evictions.folds
        for n in order { #expect(try await storage.fetch(StressRecord.self, id: "r\(n)") != nil) }
        try await storage.save(StressRecord.make(id: "r10", sequence: 10))
        let after = storage.core.evictions.folds
        let kept = Set(try await storage.fetch(StressRecord.self).map(\.id))
        return (after.reads - before.reads, after.placed - before.placed, kept)
    }

    /// Every record but r2: the one evicted.
    static let read = (0..<10).filter { $0 != 2 }
    static let keptWithoutR2 = Set((0...10).filter { $0 != 2 }.map { "r\($0)" })

    @Test func leastRecentlyUsedPlacesARecordOnceAtItsLastRead() async throws {
        let storage = try await store(.leastRecentlyUsed)
        let folded = try await fold(Self.read + Self.read + Self.read, in: storage)
        #expect(folded.reads == 27)
        #expect(folded.placed == 9)
        #expect(folded.kept == Self.keptWithoutR2)
    }

    @Test func adaptivePlacesARunOfReadsOnce() async throws {
        let storage = try await store(.adaptive)
        let folded = try await fold(Self.read.flatMap { [$0, $0, $0] }, in: storage)
        #expect(folded.reads == 27)
        #expect(folded.placed == 9)
        #expect(folded.kept == Self.keptWithoutR2)
    }
}
