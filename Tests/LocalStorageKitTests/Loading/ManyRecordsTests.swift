import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Maintenance) @_spi(Testing) @testable import LocalStorageKit

/// `fetch(_:ids:)` and `delete(_:matching:)` against a plain reference model on random data.
@Suite struct ManyRecordsTests {
    private static let longAgo = CacheExpiration.date(Date(timeIntervalSince1970: 1_000))

    /// With a memory tier too: held values come from memory, and a record changed between two calls (here,
    /// or by another instance on the same files) is never served stale.
    @Test(arguments: [false, true])
    func fetchByIDsAgreesWithAModel(memoryTier: Bool) async throws {
        var configuration = diskConfiguration()
        if memoryTier { configuration.memoryCache = MemoryCacheConfiguration(maxRecords: 200) }
        let storage = try LocalStorage(configuration: configuration)
        // Another instance on the same files, whose writes reach `storage` only through the store.
        let other = try LocalStorage(configuration: diskConfiguration(configuration.databaseDirectory))
        var random = SplitMix64(seed: 23)
        var model: [String: Product] = [:]
        for n in 0..<400 {
            let product = Product.sample(n)
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<2:
                try await storage.save(product, expiration: Self.longAgo)  // expired
            case 2:
                continue  // never saved
            default:
                try await storage.save(product, expiration: .hours(1))
                model[product.id] = product
            }
        }
        for round in 0..<20 {
            let ids = (0..<Int.random(in: 0..<120, using: &random)).map { _ in
                "sku_\(Int.random(in: 0..<450, using: &random))"
            }
            let expected = Dictionary(uniqueKeysWithValues: Set(ids).compactMap { id in model[id].map { (id, $0) } })
            #expect(try await storage.fetch(Product.self, ids: ids) == expected, "round \(round)")
            let inTransaction = try await storage.read { tx in try tx.fetch(Product.self, ids: ids) }
            #expect(inTransaction == expected)
            if memoryTier {
                // Every record just read is held (fewer than 200 of them): a second call decodes nothing.
                let decodes = storage.decodeCount
                #expect(try await storage.fetch(Product.self, ids: ids) == expected, "round \(round), again")
                #expect(storage.decodeCount == decodes, "round \(round)")
            }
            // Writes between rounds, by this instance and the other one: new values, deletes, expiries; of
            // records read just before (held by a tier), and read again first thing after.
            let written = (0..<10).map { _ in Int.random(in: 0..<450, using: &random) }
            _ = try await storage.fetch(Product.self, ids: written.map { "sku_\($0)" })
            for n in written {
                var product = Product.sample(n)
                product.title = "round \(round)"
                let writer = Bool.random(using: &random) ? storage : other
                switch Int.random(in: 0..<4, using: &random) {
                case 0:
                    try await writer.delete(Product.self, id: product.id)
                    model[product.id] = nil
                case 1:
                    try await writer.save(product, expiration: Self.longAgo)
                    model[product.id] = nil
                default:
                    try await writer.save(product, expiration: .hours(1))
                    model[product.id] = product
                }
            }
            let writtenIDs = written.map { "sku_\($0)" }
            let afterWrites = Dictionary(
                uniqueKeysWithValues: Set(writtenIDs).compactMap { id in model[id].map { (id, $0) } })
            #expect(try await storage.fetch(Product.self, ids: writtenIDs) == afterWrites, "round \(round) writes")
        }
        #expect(try await storage.fetch(Product.self, ids: []) == [:])
        await #expect(throws: LocalStorageError.self) { _ = try await storage.fetch(Product.self, ids: ["sku_1", ""]) }
    }

    /// Many records in one call: each migrated record is written back, and when records do not decode, the error
    /// names the first of them in the order asked for (it guarded a decode on every processor, since dropped).
    @Test func fetchByIDsOfManyRecordsMigratesThemAllAndNamesTheFirstFailure() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        var random = SplitMix64(seed: 31)
        try await storage.save(contentsOf: (0..<200).map { CounterV1(id: "c\($0)", n: $0) })
        let ids = (0..<200).map { "c\($0)" }.shuffled(using: &random)
        let expected = (0..<200).map { Counter(id: "c\($0)", count: $0, label: "c\($0)") }
        #expect(
            try await storage.fetch(Counter.self, ids: ids)
                == Dictionary(uniqueKeysWithValues: expected.map { ($0.id, $0) }))
        for id in ids { #expect(try await storage.metadata(Counter.self, id: id)?.version == 3, "\(id)") }

        // Records a newer version wrote (version 3) cannot be read as a `CounterV1`.
        let older = try LocalStorage(configuration: diskConfiguration())
        try await older.save(contentsOf: (0..<200).map { CounterV1(id: "c\($0)", n: $0) })
        for newer in [30, 160, 190] { try await older.save(Counter(id: "c\(newer)", count: newer, label: "")) }
        let inOrder = (0..<200).map { "c\($0)" }
        for (asked, first) in [(inOrder, "c30"), (Array(inOrder[100...]), "c160"), (inOrder.reversed(), "c190")] {
            do {
                _ = try await older.fetch(CounterV1.self, ids: asked)
                Issue.record("read \(first) written by a newer version")
            } catch LocalStorageError.decodingFailed(let reason) {
                #expect(reason.contains("\"\(first)\""), "\(reason)")
            }
        }
    }

    @Test func fetchByIDsInAWriteSeesItsOwnWrites() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let found = try await storage.write { tx in
            try tx.save(Product.sample(1))
            return try tx.fetch(Product.self, ids: ["sku_1", "sku_2"])
        }
        #expect(found == ["sku_1": Product.sample(1)])
        let tickets = storage.repository(Ticket.self)
        try await tickets.save(Ticket(id: 5, title: "five"))
        #expect(try await tickets.fetch(ids: [5, 6]) == [5: Ticket(id: 5, title: "five")])
    }

    @Test func deleteMatchingAgreesWithAModelAndTheChangeStream() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        var random = SplitMix64(seed: 7)
        var model: [String: Product] = [:]
        let categories = ["books", "toys", "games", "food"]
        var batch: [Product] = []
        for n in 0..<600 {
            let product = Product(
                id: "p\(n)", title: "t\(n)", category: categories[Int.random(in: 0..<4, using: &random)],
                price: Double(Int.random(in: 0..<100, using: &random)), rating: 1)
            batch.append(product)
            model[product.id] = product
        }
        try await storage.save(contentsOf: batch)
        // Some expired records that match too: they are not live, so not counted.
        for n in 0..<20 {
            try await storage.save(
                Product(id: "old\(n)", title: "", category: "books", price: 1, rating: 1), expiration: Self.longAgo)
        }
        let changes = storage.changes(of: Product.self)
        var deletedIDs: [String] = []
        let rounds: [([StorageIndexFilter], @Sendable (Product) -> Bool)] = [
            ([.equals("category", "books")], { $0.category == "books" }),
            ([.between("price", 10.0...30.0)], { (10.0...30.0).contains($0.price) }),
            ([.equals("category", "toys"), .atLeast("price", 50.0)], { $0.category == "toys" && $0.price >= 50 }),
            ([.equals("category", "none")], { _ in false }),
            ([.lessThan("price", 5.0)], { $0.price < 5 }),
        ]
        for (filters, matches) in rounds {
            let expected = model.values.filter(matches)
            let deleted = try await storage.delete(Product.self, matching: filters)
            #expect(deleted == expected.count)
            for product in expected { model[product.id] = nil }
            deletedIDs += expected.map(\.id)
            #expect(try await storage.count(Product.self) == model.count)
            for category in categories {
                #expect(
                    try await storage.count(Product.self, matching: [.equals("category", category)])
                        == model.values.filter { $0.category == category }.count)
            }
            // Counts of price ranges come from the count tree's counters, which a batch changes at its end.
            for _ in 0..<8 {
                let low = Double(Int.random(in: 0..<100, using: &random))
                let range = low...(low + Double(Int.random(in: 0..<40, using: &random)))
                #expect(
                    try await storage.count(Product.self, matching: [.between("price", range)])
                        == model.values.filter { range.contains($0.price) }.count)
            }
        }
        #expect(
            try await storage.fetch(Product.self, options: FetchOptions()).map(\.id).sorted() == model.keys.sorted())
        var streamed: [String] = []
        for await change in changes {
            guard case .deleted(let id) = change else { continue }
            streamed.append(id)
            if streamed.count == deletedIDs.count { break }
        }
        #expect(streamed.sorted() == deletedIDs.sorted())
        #expect(try await verifyProblems(storage) == [])
        let inTransaction = try await storage.write { tx in try tx.delete(Product.self, matching: []) }
        #expect(inTransaction == model.count)
        #expect(try await storage.count(Product.self) == 0)
    }

    @Test func deleteMatchingRejectsAnUnknownIndex() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Product.sample(1))
        await #expect(throws: LocalStorageError.self) {
            _ = try await storage.repository(Product.self).delete(matching: [.equals("colour", "red")])
        }
        #expect(try await storage.count(Product.self) == 1)
    }
}
