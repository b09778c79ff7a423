import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// LMDB keeps the pages a commit frees for the snapshot before it until one more commit: a store written in
/// large batches would take new pages at the end of its file for each batch's rewrites, and end one batch's
/// rewritten pages larger than it needs. After a commit that freed many pages the writer commits once more, so
/// that the next batch reuses them.
@Suite struct FreedPagesReuseTests {
    /// Re-saving every product with new random prices and ratings rewrites nearly every page of the records and of
    /// both indexes, round after round. Once the rounds are under way, the store's free list holds no more than the
    /// last round freed (without the small commit it held that and the round before, so the file grew by one more
    /// round's pages), the file grows only by what the store holds more, and every record reads back as last saved.
    @Test func batchesReuseThePagesTheBatchBeforeFreed() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        var generator = SplitMix64(seed: 71)
        var products = (0..<20_000).map { n in
            Product(
                id: "p\(n)", title: String(repeating: "t", count: 100 + n % 50), category: "c\(n % 7)",
                price: Double(generator.below(1_000_000)), rating: Double(generator.below(1_000_000)))
        }
        let environment = storage.core.environment
        var lastPages: [Int] = []
        var freed = 0
        for _ in 0..<6 {
            for index in products.indices {
                products[index].price = Double(generator.below(1_000_000))
                products[index].rating = Double(generator.below(1_000_000))
            }
            let before = environment.lastTransactionID
            try await storage.save(contentsOf: products)
            let batch = environment.lastTransactionID
            let (freedByBatch, free) = try environment.read { txn in
                (try txn.pagesFreed(byTransaction: batch), try txn.freePageCount())
            }
            lastPages.append(environment.info().lastPage)
            // Round 1 filled an empty store and freed next to nothing.
            guard lastPages.count > 1 else { continue }
            if lastPages.count > 2 {
                // The round before freed enough pages for the small commit, which came before this round's batch.
                try #require(freed * (try storage.core.writer.pageSize()) >= CommitQueue.largeCommitBytes)
                #expect(batch == before + 2, "one small commit before the batch")
            }
            freed = freedByBatch
            #expect(free <= freedByBatch + freedByBatch / 4, "free pages \(free), the batch freed \(freedByBatch)")
        }
        // Rounds 4 to 6 rewrite as much as round 3 did, in the pages the round before each freed: the file grows
        // only by what the store holds more (the change log's entries, until it is trimmed).
        #expect((lastPages[5] - lastPages[2]) * 3 <= freed, "last pages \(lastPages), a round freed \(freed)")
        let stored = try await storage.fetch(Product.self, ids: products.map(\.id))
        #expect(stored.count == products.count)
        #expect(products.allSatisfy { stored[$0.id] == $0 })
    }

    /// A batch save fills the records tree's leaves to the brim. Saving the same records again (their creation time
    /// now before their update time) keeps each record's size, so the leaves do not split: before the creation
    /// time's distance took a fixed width, it grew from one byte to four or more and the tree doubled (trial97 #2).
    @Test func savingRecordsAgainKeepsTheLeavesABatchFilled() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let products = (0..<20_000).map(Product.sample)
        try await storage.save(contentsOf: products)
        let schema = try await storage.core.schema(for: Product.self)
        let environment = storage.core.environment
        let before = try environment.read { txn in try txn.statistics(schema.records) }
        for start in stride(from: 0, to: products.count, by: 5_000) {
            try await storage.save(contentsOf: Array(products[start..<(start + 5_000)]))
        }
        let after = try environment.read { txn in try txn.statistics(schema.records) }
        #expect(after.entries == before.entries)
        #expect(after.leafPages * 20 <= before.leafPages * 21, "leaves \(before.leafPages) → \(after.leafPages)")
        let stored = try await storage.fetch(Product.self, ids: products.map(\.id))
        #expect(products.allSatisfy { stored[$0.id] == $0 })
    }

    /// A commit of a few records frees a few pages: it is not followed by another.
    @Test func aSmallSaveCommitsOnce() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: (0..<5_000).map(Product.sample))
        let before = storage.core.environment.lastTransactionID
        try await storage.save(Product.sample(1))
        try await storage.save(contentsOf: (10_000..<10_010).map(Product.sample))
        try await storage.waitForQueuedWrites()
        #expect(storage.core.environment.lastTransactionID == before + 2)
    }

    /// The small commit waits for the next piece of work: the large commit's callers return without it (it would
    /// take LMDB's write lock, which another process may hold for a long write), and when a commit the writer did
    /// not make came in between (another process's), that commit made the pages reusable and none is made.
    @Test func theSmallCommitComesBeforeTheNextWorkUnlessAnotherCommitCameBetween() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let environment = storage.core.environment
        var products = (0..<20_000).map(Product.sample)
        try await storage.save(contentsOf: products)
        var reclaimedFirst: Int?
        for round in 1...2 {
            for index in products.indices { products[index].title = "Product \(index), round \(round)" }
            let before = environment.lastTransactionID
            try await storage.save(contentsOf: products)
            let large = environment.lastTransactionID
            #expect(large == before + 1, "the batch's callers returned after its own commit")
            let freed = try environment.read { txn in try txn.pagesFreed(byTransaction: large) }
            try #require(freed * (try storage.core.writer.pageSize()) >= CommitQueue.largeCommitBytes)
            if round == 2 {
                // Another process's commit, as far as this writer can tell: one it did not make.
                try environment.write { txn in
                    let meta = try #require(try txn.openDatabase(TypeRegistry.metaName, create: false))
                    try txn.put(meta, key: Array("test.other".utf8), value: [1])
                }
            }
            try await storage.save(Product.sample(1))
            let reclaimed = try environment.read { txn -> UInt64? in
                guard let meta = try txn.openDatabase(TypeRegistry.metaName, create: false),
                    let bytes = try txn.get(meta, key: CommitQueue.reclaimKey), bytes.count == 8
                else { return nil }
                return UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self))
            }
            // Round 1: the small commit, naming the large one, then the save. Round 2: the other commit, the save.
            #expect(environment.lastTransactionID == large + 2)
            if round == 1 { reclaimedFirst = large }
            #expect(reclaimed.map { Int($0) } == reclaimedFirst)
        }
        #expect(try await storage.fetch(Product.self, id: "sku_19999") == products[19_999])
    }

    /// Emptying a type frees every page of its trees, whatever number of changes it logs: the next commit
    /// reuses them, and refilling the type takes no new pages at the end of the file.
    @Test func refillingAnEmptiedTypeReusesItsPages() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let products = (0..<20_000).map(Product.sample)
        try await storage.save(contentsOf: products)
        let environment = storage.core.environment
        try await storage.deleteAll(Product.self)
        try await storage.waitForQueuedWrites()
        let emptied = environment.info().lastPage
        try await storage.save(contentsOf: products)
        try await storage.waitForQueuedWrites()
        // The refill takes new pages for its change-log entries only (the emptied store's log stays).
        let grown = environment.info().lastPage - emptied
        #expect(grown * 4 <= emptied, "the refill took \(grown) new pages, the store had \(emptied)")
        #expect(try await storage.count(Product.self) == products.count)
    }
}
