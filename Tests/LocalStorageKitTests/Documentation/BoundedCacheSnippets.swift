// The code listings of the DocC article "A Bounded Cache", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum BoundedCacheSnippets {
    static func configure() async throws -> StorageStatistics {
        // snippet: bounded-cache-configuration
        var config = LocalStorageConfiguration()
        config.limits = StorageLimits(maxRecords: 100_000, maxBytes: 512 << 20)  // the whole store
        config.evictionPolicy = .adaptive  // default; .leastRecentlyUsed, .leastRecentlyUpdated, .soonestExpiring
        config.memoryCache = MemoryCacheConfiguration(maxRecords: 10_000, maxBytes: 64 << 20)  // nil: off
        let storage = try LocalStorage(configuration: config)

        struct Thumbnail: LocalStorable {
            let id: String
            var png: Data
            static var storageLimits: StorageLimits? { StorageLimits(maxRecords: 1_000) }  // one type
        }
        let usage = try await storage.statistics()  // StorageStatistics
        // snippet-end
        _ = Thumbnail(id: "t", png: Data())
        return usage
    }
}
