import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Benchmarks) @testable import LocalStorageKit

/// ``LocalStorage/statistics()`` and ``LocalStorage/statistics(for:)`` against a model of what was written.
@Suite struct StorageStatisticsTests {
    @Test(arguments: [true, false])
    func statisticsMatchAModelAfterRandomWrites(countTree: Bool) async throws {
        var configuration = diskConfiguration()
        configuration.withoutCountTree = !countTree
        configuration.memoryCache = MemoryCacheConfiguration(maxRecords: 10)
        let storage = try LocalStorage(configuration: configuration)
        var generator = SplitMix64(seed: 99)
        // id → (payload bytes, expired)
        var notes: [String: (bytes: Int, expired: Bool)] = [:]
        var products: [String: (bytes: Int, expired: Bool)] = [:]
        let past = Date(timeIntervalSince1970: 1)
        for step in 0..<400 {
            let n = generator.below(40)
            let expires = generator.below(5) == 0
            switch generator.below(7) {
            case 6:
                // A batch replaces some records and adds others; its payload bytes are counted once.
                let batch = Set((0..<(1 + generator.below(6))).map { _ in generator.below(40) }).map {
                    Note(id: "n\($0)", text: String(repeating: "b", count: generator.below(300)))
                }
                try await storage.save(contentsOf: batch, expiration: expires ? .date(past) : .never)
                for note in batch {
                    let size = try #require(try await storage.metadata(Note.self, id: note.id)).sizeInBytes
                    notes[note.id] = (size, expires)
                }
            case 0:
                try await storage.delete(Note.self, id: "n\(n)")
                notes["n\(n)"] = nil
            case 1:
                try await storage.delete(Product.self, id: "sku_\(n)")
                products["sku_\(n)"] = nil
            case 2, 3:
                let note = Note(id: "n\(n)", text: String(repeating: "t", count: generator.below(300)))
                // An expired save: stored (and counted) until purged, but expired.
                try await storage.save(note, expiration: expires ? .date(past) : .never)
                let size = try #require(try await storage.metadata(Note.self, id: note.id)).sizeInBytes
                notes[note.id] = (size, expires)
            default:
                let product = Product.sample(n)
                try await storage.save(product, expiration: expires ? .date(past) : .never)
                let size = try #require(try await storage.metadata(Product.self, id: product.id)).sizeInBytes
                products[product.id] = (size, expires)
            }
            if step % 50 == 0 { _ = try await storage.fetch(Note.self, id: "n\(n)") }
        }
        let statistics = try await storage.statistics()
        func expect(_ figures: TypeStatistics?, _ model: [String: (bytes: Int, expired: Bool)]) throws {
            let figures = try #require(figures)
            #expect(figures.records == model.count)
            #expect(figures.payloadBytes == model.values.reduce(0) { $0 + $1.bytes })
            #expect(figures.expiredRecords == model.values.filter(\.expired).count)
            #expect(figures.evictions == 0)
        }
        try expect(statistics.types[Note.storageName], notes)
        try expect(statistics.types[Product.storageName], products)
        try expect(try await storage.statistics(for: Note.self), notes)
        try expect(try await storage.statistics(for: Product.self), products)
        #expect(statistics.records == notes.count + products.count)
        #expect(
            statistics.payloadBytes
                == (notes.values.reduce(0) { $0 + $1.bytes }
                    + products.values.reduce(0) { $0 + $1.bytes }))
        #expect(
            statistics.expiredRecords
                == (notes.values.filter(\.expired).count
                    + products.values.filter(\.expired).count))
        #expect(statistics.evictions == 0)
        #expect(statistics.limits == nil)
        let tier = try #require(storage.memoryTier)
        #expect(statistics.memoryHits == tier.hits)
        #expect(statistics.memoryMisses == tier.misses)
        #expect(statistics.memoryHits + statistics.memoryMisses == 8)
        #expect(statistics.mapUsedBytes > 0)
        #expect(statistics.mapUsedBytes + statistics.mapFreeBytes == storage.core.environment.currentMapSize)
    }

    @Test func statisticsCountEvictionsAndShowLimits() async throws {
        var configuration = diskConfiguration()
        configuration.limits = StorageLimits(maxRecords: 5)
        let storage = try LocalStorage(configuration: configuration)
        for n in 0..<12 { try await storage.save(Note(id: "n\(n)", text: "\(n)")) }
        let statistics = try await storage.statistics()
        #expect(statistics.records == 5)
        #expect(statistics.evictions == 7)
        #expect(statistics.types[Note.storageName]?.evictions == 7)
        #expect(statistics.limits == StorageLimits(maxRecords: 5))
        #expect(statistics.memoryHits == 0 && statistics.memoryMisses == 0)
    }

    @Test func statisticsListTypesThisProcessNeverUsed() async throws {
        let directory = temporaryDirectory()
        do {
            let writer = try LocalStorage(configuration: diskConfiguration(directory))
            try await writer.save(contentsOf: (0..<3).map(Product.sample))
        }
        // This store never resolved Product: its databases are opened for the statistics.
        let reader = try LocalStorage(configuration: diskConfiguration(directory))
        let statistics = try await reader.statistics()
        #expect(statistics.types[Product.storageName]?.records == 3)
        #expect(statistics.records == 3)
    }
}
