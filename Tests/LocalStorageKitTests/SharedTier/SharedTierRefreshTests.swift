import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// A background refresh on the shared tier loads only while the server still holds the record it served (review-91
/// R1): another instance's delete or new expiry that reached the server before the refresh took the server's lease,
/// but not yet this store, was undone by the refresh (the server's lease script took the lease with no record, and
/// compared the update time alone).
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierRefreshTests {
    let tier = SharedTestServer.configuration()

    /// The server's copy of `id` is deleted, or given another expiry, behind this store's back (as another instance's
    /// write whose notice has not come yet), then this store serves its copy stale: the refresh loads nothing, and the
    /// server keeps what the write left.
    @Test(arguments: ["deleted", "new expiry"])
    func aRefreshDoesNotUndoAWriteTheServerHasAndThisStoreHasNot(write: String) async throws {
        let storage = try await diskSharedStore(tier)
        let old = Product(id: "sku_served", title: "old", category: "books", price: 1, rating: 1)
        try await storage.save(old, expiration: .hours(1))
        let shared = try #require(storage.sharedTier)
        let key = shared.layout.record(type: Array("Product".utf8), id: Array(old.id.utf8))
        let record = try #require(try await shared.connection.call([Array("GET".utf8), key]).bytes)
        if write == "deleted" {
            _ = try await shared.connection.call([Array("DEL".utf8), key])
        } else {
            // The same record with an expiry a second later (bytes 25–32 of the header, little-endian).
            var changed = record
            let expiresAt = changed[24..<32].enumerated().reduce(UInt64(0)) {
                $0 | UInt64($1.element) << (8 * $1.offset)
            }
            for byte in 0..<8 {
                changed[24 + byte] = UInt8(truncatingIfNeeded: (expiresAt + 1_000_000_000) >> (8 * byte))
            }
            _ = try await shared.connection.call([Array("SET".utf8), key, changed])
        }
        let loads = Atomic(0)
        let policy = LoadPolicy(expiration: .hours(2), refreshAfter: .zero, loadTimeout: .seconds(600))
        let served = try await storage.fetch(Product.self, id: old.id, policy: policy) { id in
            loads.add(1, ordering: .relaxed)
            return Product(id: id, title: "reloaded", category: "books", price: 2, rating: 2)
        }
        #expect(served == old)
        try await eventually("the refresh to end") { storage.core.loads.count == 0 }
        #expect(loads.load(ordering: .relaxed) == 0)
        let left = try await shared.connection.call([Array("GET".utf8), key]).bytes
        if write == "deleted" {
            #expect(left == nil)
        } else {
            #expect(left.map { Array($0[24..<32]) } != Array(record[24..<32]))
        }
    }
}
