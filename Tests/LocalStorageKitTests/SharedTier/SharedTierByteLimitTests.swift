import Foundation
import Testing

@testable import LocalStorageKit

/// A byte limit with a shared tier. A record that no eviction could fit is refused before the server holds it, as
/// a local save refuses it; one that another instance wrote under wider limits is served without being kept.
/// Before (review-81 F1), the save went to the server and returned, and the local commit evicted every other
/// record of the near cache and then the new one; every later fill of it did the same.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierByteLimitTests {
    let tier = SharedTestServer.configuration()

    struct Blob: LocalStorable, Equatable {
        let id: String
        var text: String
    }

    private let limit = 20_000
    private let small = (0..<37).map { Blob(id: "b\($0)", text: String(repeating: "x", count: 400)) }

    private func store(maxBytes: Int?) async throws -> LocalStorage {
        var configuration = LocalStorageConfiguration.inMemory
        var tier = tier
        tier.maxStaleness = .seconds(30)  // Not about staleness: a loaded machine may delay a heartbeat past 1 s.
        configuration.sharedTier = tier
        configuration.limits = maxBytes.map { StorageLimits(maxBytes: $0) }
        let storage = try LocalStorage(configuration: configuration)
        _ = try await waitUntil { storage.sharedTier.map { $0.phase != .connecting && $0.phase != .syncing } ?? true }
        return storage
    }

    @Test func aRecordLargerThanTheLimitIsRefusedBeforeTheServerHoldsIt() async throws {
        let storage = try await store(maxBytes: limit)
        let other = try await store(maxBytes: nil)
        try await storage.save(contentsOf: small)
        let big = Blob(id: "big", text: String(repeating: "y", count: 30_000))
        await expectRecordTooLarge("big", limit: limit) { try await storage.save(big) }
        await expectRecordTooLarge("big", limit: limit) { try await storage.save(contentsOf: [small[0], big]) }
        await expectRecordTooLarge("b1", limit: limit) {
            _ = try await storage.update(Blob.self, id: "b1") { $0.text = String(repeating: "z", count: 25_000) }
        }
        await expectRecordTooLarge("loaded", limit: limit) {
            _ = try await storage.fetch(Blob.self, id: "loaded") { id in Blob(id: id, text: big.text) }
        }
        // Nothing reached the server, and nothing was evicted here.
        #expect(try await other.fetch(Blob.self, id: "big") == nil)
        #expect(try await other.fetch(Blob.self, id: "loaded") == nil)
        #expect(try await other.fetch(Blob.self, id: "b1") == small[1])
        #expect(try await storage.count(Blob.self, matching: [], options: .nearCache) == small.count)
        #expect(try await storage.statistics().evictions == 0)
    }

    @Test func aLargerRecordWrittenUnderWiderLimitsIsServedWithoutBeingKept() async throws {
        let narrow = try await store(maxBytes: limit)
        let wide = try await store(maxBytes: nil)
        try await narrow.save(contentsOf: small)
        let big = Blob(id: "big", text: String(repeating: "y", count: 30_000))
        try await wide.save(big)
        // Notices apply in order: once the marker is here, the big record's notice has been applied.
        try await wide.save(Blob(id: "marker", text: "m"))
        #expect(
            try await waitUntil { try await narrow.count(Blob.self, matching: [], options: .nearCache) == 38 })
        #expect(try await narrow.fetch(Blob.self, id: "big") == big)
        try await narrow.core.writer.perform { _ in }  // the fill, were it kept, commits with this one
        #expect(try await narrow.count(Blob.self, matching: [], options: .nearCache) == 38)

        // A held record that another instance makes too large: the stale copy goes, the rest stays.
        var grown = small[1]
        grown.text = String(repeating: "z", count: 25_000)
        try await wide.save(grown)
        #expect(
            try await waitUntil { try await narrow.count(Blob.self, matching: [], options: .nearCache) == 37 })
        #expect(try await narrow.fetch(Blob.self, id: "b1") == grown)
        #expect(try await narrow.fetch(Blob.self, id: "b2") == small[2])
        #expect(try await narrow.statistics().evictions == 0)
    }

    /// `updates(of:id:)` of a record this instance cannot keep follows its versions by the server's times: each
    /// version looked like the first one served, so the stream stayed at it (trial82 #3).
    @Test func updatesOfARecordTooLargeToKeepFollowEachVersion() async throws {
        let narrow = try await store(maxBytes: limit)
        let wide = try await store(maxBytes: nil)
        _ = try await narrow.count(Blob.self, matching: [], options: .nearCache)  // narrow knows the type
        let first = Blob(id: "big", text: String(repeating: "a", count: 30_000))
        let second = Blob(id: "big", text: String(repeating: "b", count: 31_000))
        try await wide.save(first)
        let values = narrow.updates(of: Blob.self, id: "big")
        let seen = try await withTimeout {
            var iterator = values.makeAsyncIterator()
            var seen: [Int] = []
            while let value = try await iterator.next() {
                let length = value?.text.count ?? 0
                if seen.last != length { seen.append(length) }
                if length == first.text.count && seen.count == 1 { try await wide.save(second) }
                if length == second.text.count { break }
            }
            return seen
        }
        #expect(seen == [first.text.count, second.text.count])
        #expect(try await narrow.count(Blob.self, matching: [], options: .nearCache) == 0)
    }

    /// A record this instance cannot keep is still a write it hears of: its live queries (which run on the server)
    /// rerun, as for any other write; before, nothing was published for it and they stayed as they were.
    @Test func aLiveQueryHearsOfARecordTooLargeToKeep() async throws {
        let narrow = try await store(maxBytes: limit)
        let wide = try await store(maxBytes: nil)
        var big = Product.sample(3)
        big.title = String(repeating: "t", count: 30_000)
        let books = narrow.updates(of: Product.self, matching: [.equals("category", "books")])
        let ids = try await withTimeout { [big] in
            var iterator = books.makeAsyncIterator()
            var ids = try await iterator.next()?.map(\.id)
            try await wide.save(big)
            while let result = try await iterator.next() {
                ids = result.map(\.id)
                if ids == [big.id] { break }
            }
            return ids
        }
        #expect(ids == [big.id])
        #expect(try await narrow.count(Product.self, matching: [], options: .nearCache) == 0)
    }
}
