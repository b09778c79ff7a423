import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// The seam between the public methods and the tiers (`RecordStore`): the stack a configuration opens, and
/// the same answers from every stack on the same random operations.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct TierStackTests {
    static func memoryConfiguration() -> LocalStorageConfiguration {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.memoryCache = MemoryCacheConfiguration(maxRecords: 16, maxBytes: 1 << 20)
        return configuration
    }

    @Test func theStackHasTheLayersTheConfigurationAsks() async throws {
        let plain = try LocalStorage(configuration: .inMemory)
        #expect(plain.tiers is LocalRecordStore)
        let memory = try LocalStorage(configuration: Self.memoryConfiguration())
        #expect(memory.tiers is MemoryTierRecordStore)
        var both = Self.memoryConfiguration()
        both.sharedTier = SharedTestServer.configuration()
        let shared = try LocalStorage(configuration: both)
        let top = try #require(shared.tiers as? SharedTierRecordStore)
        #expect(top.base is MemoryTierRecordStore)
    }

    /// Random saves, deletes, expirations, updates and reads on a plain store, one with a memory tier and one
    /// with a memory tier under a shared tier: every call answers alike (values, counts, errors).
    @Test func everyStackAnswersAlike() async throws {
        var sharedConfiguration = Self.memoryConfiguration()
        sharedConfiguration.sharedTier = SharedTestServer.configuration()
        sharedConfiguration.sharedTier?.maxStaleness = .seconds(30)
        let stores = [
            try LocalStorage(configuration: .inMemory),
            try LocalStorage(configuration: Self.memoryConfiguration()),
            try await sharedStore(sharedConfiguration),
        ]
        var random = SplitMix64(seed: 22)
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        let ids = (0..<24).map { "g\($0)" }
        let names = ["a", "ab", "b", "é"]
        func gadget() -> Gadget {
            Gadget(
                id: pick(ids), name: pick(names), score: Double(random.next() % 8), rank: Int(random.next() % 5),
                tag: random.next() % 2 == 0 ? nil : "t")
        }
        for step in 0..<300 {
            let choice = random.next() % 13
            let (value, batch, id, more) = (gadget(), (0..<4).map { _ in gadget() }, pick(ids), [pick(ids), pick(ids)])
            let expiration: CacheExpiration = random.next() % 2 == 0 ? .never : .hours(1)
            let filters: [StorageIndexFilter] = [.equals("name", pick(names))]
            var outcomes: [String] = []
            for storage in stores {
                let outcome: String
                do {
                    switch choice {
                    case 0, 1:
                        try await storage.save(value, expiration: expiration)
                        outcome = "saved"
                    case 2:
                        try await storage.save(contentsOf: batch, expiration: expiration)
                        outcome = "saved all"
                    case 3:
                        try await storage.delete(Gadget.self, id: id)
                        outcome = "deleted"
                    case 4:
                        try await storage.setExpiration(Gadget.self, id: id, expiration)
                        outcome = "expiration set"
                    case 5: outcome = "\(try await storage.update(Gadget.self, id: id) { $0.score += 1 })"
                    case 6: outcome = "\(String(describing: try await storage.fetch(Gadget.self, id: id)))"
                    case 7:
                        let found = try await storage.fetch(Gadget.self, ids: more)
                        outcome = "\(found.sorted { $0.key < $1.key }.map(\.value))"
                    case 8:
                        let metadata = try await storage.metadata(Gadget.self, id: id)
                        outcome = "\(String(describing: metadata.map { ($0.sizeInBytes, $0.isExpired, $0.version) }))"
                    case 9:
                        outcome =
                            "\(try await storage.fetch(Gadget.self, matching: filters, orderedBy: .ascending("score")))"
                    case 10:
                        let page = try await storage.page(Gadget.self, matching: filters, page: 1, pageSize: 3)
                        outcome = "\(page.items) \(page.totalCount) \(try await storage.count(Gadget.self))"
                    case 11: outcome = "deleted \(try await storage.delete(Gadget.self, matching: filters))"
                    default:
                        outcome = "\(try await storage.fetch(Gadget.self, options: FetchOptions(limit: 5, offset: 2)))"
                    }
                } catch {
                    outcome = "threw \(error)"
                }
                outcomes.append(outcome)
            }
            #expect(Set(outcomes).count == 1, "step \(step), operation \(choice): \(outcomes)")
        }
        #expect(try await stores[0].count(Gadget.self) > 0)
    }
}

/// A store opened with `configuration` (a shared tier and a memory tier), once its shared tier has made its
/// first connection or failed to.
private func sharedStore(_ configuration: LocalStorageConfiguration) async throws -> LocalStorage {
    let storage = try LocalStorage(configuration: configuration)
    _ = try await waitUntil { storage.sharedTier.map { $0.phase != .connecting && $0.phase != .syncing } ?? true }
    return storage
}
