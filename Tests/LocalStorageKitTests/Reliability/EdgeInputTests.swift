import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// Bad input through the public API: each case has a defined outcome, tested.
struct EdgeInputTests {
    /// A type whose index is computed and may be NaN.
    struct Ratio: LocalStorageIndexed, Equatable {
        let id: String
        var numerator: Double
        var denominator: Double

        static var storageIndexes: [StorageIndex<Ratio>] {
            [.number("ratio") { $0.numerator / $0.denominator }]
        }
    }

    // MARK: - NaN

    /// `localizedDescription`, what apps show and log, gives the error's own message on every platform.
    @Test func anErrorsLocalizedDescriptionIsItsMessage() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        do {
            _ = try await storage.fetch(Ratio.self, id: "")
            Issue.record("an empty id was accepted")
        } catch {
            let described = (error as? LocalStorageError)?.description
            #expect(described?.isEmpty == false)
            #expect(error.localizedDescription == described)
        }
    }

    /// Expiry entries that point at no record (left by damage, say) count toward a purge's batch but do not stop
    /// it: a batch of them made `purgeExpired()` (and the sweep) stop with the expired records behind them kept.
    @Test func danglingExpiryEntriesDoNotStopAPurge() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        let clock = VirtualClock()
        configuration.clock = clock
        configuration.expirySweepInterval = nil
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(contentsOf: (0..<5).map { Note(id: "n\($0)", text: "x") }, expiration: .seconds(10))
        let schema = try await storage.core.schema(for: Note.self)
        try await storage.core.writer.perform { context in
            for n in 1...10_000 {  // expiring in 1970, before the records: the purge meets them first
                try context.txn.put(schema.expiry, key: RecordWriter.timeKey(Int64(n)), value: Array("ghost\(n)".utf8))
            }
        }
        clock.advance(by: .seconds(11))
        #expect(try await storage.purgeExpired() == 5)
        #expect(try await storage.count(Note.self) == 0)
    }

    @Test func nanInAFilterIsAnInvalidQuery() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Product.sample(1))
        let filters: [StorageIndexFilter] = [
            .equals("price", Double.nan), .atLeast("price", Double.nan), .lessThan("rating", Float.nan),
            .oneOf("price", [1.0, .nan]),
        ]
        for filter in filters {
            await #expect(throws: LocalStorageError.self) {
                try await storage.fetch(Product.self, matching: [filter])
            }
            await #expect(throws: LocalStorageError.self) { try await storage.count(Product.self, matching: [filter]) }
        }
        // Infinities are ordinary bounds.
        #expect(try await storage.count(Product.self, matching: [.atLeast("price", -Double.infinity)]) == 1)
        #expect(try await storage.count(Product.self, matching: [.lessThan("price", Double.infinity)]) == 1)
    }

    @Test func nanInAJSONRecordIsAnEncodingFailureAndStoresNothing() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.codec = .json
        let storage = try LocalStorage(configuration: configuration)
        var product = Product.sample(1)
        product.price = .nan
        await #expect(throws: LocalStorageError.self) { try await storage.save(product) }
        await #expect(throws: LocalStorageError.self) {
            try await storage.save(contentsOf: [Product.sample(2), product])
        }
        #expect(try await storage.count(Product.self) == 0)
    }

    @Test func nanInABinaryRecordRoundTripsAndIsNotIndexed() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        var product = Product.sample(1)
        product.price = .nan
        try await storage.save(product)
        #expect(try await storage.fetch(Product.self, id: product.id)?.price.isNaN == true)
        #expect(try await storage.count(Product.self, matching: [.atLeast("price", -Double.infinity)]) == 0)
        // JSON has no NaN: the CLI's JSON view shows it as the string "NaN", so verify finds the record
        // healthy (CLIIntegrityTests checks that export and import restore it exactly).
        let problems = try await verifyProblems(storage)
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func aNaNIndexValueIsNotIndexed() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: [
            Ratio(id: "nan", numerator: 0, denominator: 0),
            Ratio(id: "half", numerator: 1, denominator: 2),
            Ratio(id: "inf", numerator: 1, denominator: 0),
        ])
        #expect(try await storage.fetch(Ratio.self, id: "nan") == Ratio(id: "nan", numerator: 0, denominator: 0))
        #expect(try await storage.count(Ratio.self, matching: [.atLeast("ratio", -Double.infinity)]) == 2)
        let ascending = try await storage.fetch(Ratio.self, matching: [], orderedBy: .ascending("ratio"))
        #expect(ascending.map(\.id) == ["nan", "half", "inf"], "no value sorts first ascending")
        #expect(try await verifyProblems(storage).isEmpty)
    }

    // MARK: - Ids

    @Test(arguments: [0, 512, 600, 100_000])
    func idsOutsideOneTo511BytesAreInvalid(length: Int) async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let id = String(repeating: "i", count: length)
        let note = Note(id: id, text: "x")
        await #expect(throws: LocalStorageError.self) { try await storage.save(note) }
        await #expect(throws: LocalStorageError.self) { try await storage.save(contentsOf: [note]) }
        await #expect(throws: LocalStorageError.self) { try await storage.fetch(Note.self, id: id) }
        await #expect(throws: LocalStorageError.self) { try await storage.metadata(Note.self, id: id) }
        await #expect(throws: LocalStorageError.self) { try await storage.delete(Note.self, id: id) }
        await #expect(throws: LocalStorageError.self) { try await storage.setExpiration(Note.self, id: id, .never) }
        await #expect(throws: LocalStorageError.self) { try await storage.update(Note.self, id: id) { _ in } }
        do {
            try await storage.save(note)
        } catch let error as LocalStorageError {
            guard case .invalidId = error else {
                Issue.record("expected invalidId, got \(error)")
                return
            }
        }
    }

    @Test func aFiveHundredElevenByteIdWorksEverywhereIncludingIndexes() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let id = String(repeating: "é", count: 255) + "x"  // 511 bytes of UTF-8
        #expect(id.utf8.count == 511)
        let product = Product(id: id, title: "long", category: "books", price: 1, rating: 2)
        try await storage.save(product, expiration: .days(1))
        #expect(try await storage.fetch(Product.self, id: id) == product)
        #expect(try await storage.fetch(Product.self, matching: [.equals("category", "books")]) == [product])
        #expect(try await storage.fetch(Product.self, options: FetchOptions(sort: .newestFirst)) == [product])
        #expect(try await verifyProblems(storage).isEmpty)
        try await storage.delete(Product.self, id: id)
        #expect(try await storage.count(Product.self) == 0)
    }

    // MARK: - Strings

    @Test func stringsWithZeroBytesRoundTripAndMatchExactly() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let products = [
            Product(id: "a\0b", title: "t\0", category: "x\0y", price: 1, rating: 1),
            Product(id: "a", title: "", category: "x", price: 2, rating: 2),
            Product(id: "a\0", title: "\0\0", category: "x\0", price: 3, rating: 3),
            Product(id: "\0", title: "z", category: "\0", price: 4, rating: 4),
        ]
        try await storage.save(contentsOf: products)
        for product in products {
            #expect(try await storage.fetch(Product.self, id: product.id) == product)
        }
        #expect(try await storage.fetch(Product.self, matching: [.equals("category", "x\0y")]).map(\.id) == ["a\0b"])
        #expect(try await storage.fetch(Product.self, matching: [.equals("category", "x")]).map(\.id) == ["a"])
        #expect(try await storage.count(Product.self, matching: [.hasPrefix("category", "x\0")]) == 2)
        let ordered = try await storage.fetch(Product.self, matching: [], orderedBy: .ascending("category"))
        #expect(ordered.map(\.category) == ["\0", "x", "x\0", "x\0y"])
        #expect(try await storage.fetch(Product.self).map(\.id) == ["\0", "a", "a\0", "a\0b"])
    }

    @Test func unpairedSurrogatesBecomeReplacementCharacters() async throws {
        // Swift strings cannot hold an unpaired surrogate: decoding UTF-16 repairs it to U+FFFD, and
        // that repaired string is what is stored, indexed and matched.
        let storage = try LocalStorage(configuration: .inMemory)
        let lone = String(decoding: [0x61, 0xD800, 0x62] as [UInt16], as: UTF16.self)
        #expect(lone == "a\u{FFFD}b")
        let product = Product(id: lone, title: lone, category: lone, price: 1, rating: 1)
        try await storage.save(product)
        #expect(try await storage.fetch(Product.self, id: lone) == product)
        #expect(try await storage.fetch(Product.self, matching: [.equals("category", "a\u{FFFD}b")]) == [product])

        // A stored JSON payload with an escaped lone surrogate (written by something else) reads without
        // a crash: either repaired or reported as decodingFailed, never a trap.
        let schema = try await storage.core.schema(for: Note.self)
        let header = RecordHeader(
            format: .json, version: 1, createdAt: 1, updatedAt: 1, expiresAt: 0,
            signature: schema.signature, indexValues: [])
        let bytes = try header.serialized(payload: Array(#"{"id":"s","text":"\ud800x"}"#.utf8))
        try await storage.core.writer.perform { context in
            try context.txn.put(schema.records, key: Array("s".utf8), value: bytes)
        }
        do {
            let note = try await storage.fetch(Note.self, id: "s")
            #expect(note?.text.hasSuffix("x") == true)
        } catch let error as LocalStorageError {
            guard case .decodingFailed = error else {
                Issue.record("expected decodingFailed, got \(error)")
                return
            }
        }
    }

    @Test func indexValuesOverTheKeyBudgetStayExact() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let base = String(repeating: "k", count: 1_000)
        let products = [
            Product(id: "p1", title: "", category: base + "a", price: 1, rating: 1),
            Product(id: "p2", title: "", category: base + "b", price: 2, rating: 2),
            Product(id: "p3", title: "", category: base, price: 3, rating: 3),
            Product(id: "p4", title: "", category: String(repeating: "z", count: 60_000), price: 4, rating: 4),
        ]
        try await storage.save(contentsOf: products)
        #expect(try await storage.fetch(Product.self, matching: [.equals("category", base + "b")]).map(\.id) == ["p2"])
        #expect(try await storage.count(Product.self, matching: [.hasPrefix("category", base)]) == 3)
        #expect(try await storage.count(Product.self, matching: [.greaterThan("category", base + "a")]) == 2)
        let ordered = try await storage.fetch(Product.self, matching: [], orderedBy: .descending("category"))
        #expect(ordered.map(\.id) == ["p4", "p2", "p1", "p3"])
        #expect(try await verifyProblems(storage).isEmpty)
    }

    /// The message names the index and the sizes (it said "name or value is too long").
    @Test func anIndexValueTooLongForTheHeaderIsAnEncodingFailure() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let product = Product(
            id: "huge", title: "", category: String(repeating: "h", count: 70_000), price: 1,
            rating: 1)
        await #expect(throws: LocalStorageError.self) { try await storage.save(product) }
        do {
            try await storage.save(product)
        } catch let error as LocalStorageError {
            guard case .encodingFailed(let reason) = error else {
                Issue.record("expected encodingFailed, got \(error)")
                return
            }
            #expect(
                reason.contains("\"category\"") && reason.contains("70000") && reason.contains("65,535"), "\(reason)")
        }
        #expect(try await storage.count(Product.self) == 0)
    }

    // MARK: - Pages and limits

    @Test func pagesAndPageSizesAtTheExtremes() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<7).map(Product.sample))
        for (page, size) in [(0, 10), (1, 0), (-1, 10), (1, -5), (Int.min, 1)] {
            await #expect(throws: LocalStorageError.self, "page \(page) size \(size)") {
                try await storage.page(Product.self, page: page, pageSize: size)
            }
        }
        let last = try await storage.page(Product.self, orderedBy: .ascending("price"), page: Int.max, pageSize: 3)
        #expect(last.items.isEmpty && last.totalCount == 7 && last.totalPages == 3 && !last.hasNextPage)
        let all = try await storage.page(Product.self, orderedBy: .ascending("price"), page: 1, pageSize: Int.max)
        #expect(all.items.count == 7 && all.totalPages == 1 && !all.hasNextPage && !all.hasPreviousPage)
        let both = try await storage.page(Product.self, page: Int.max, pageSize: Int.max)
        #expect(both.items.isEmpty && both.totalCount == 7 && both.hasPreviousPage)
        let second = try await storage.page(Product.self, matching: [.atLeast("price", 0.0)], page: 2, pageSize: 5)
        #expect(second.items.count == 2 && second.totalPages == 2)
    }

    @Test func limitsAndOffsetsAtTheExtremes() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<7).map(Product.sample))
        let query: [StorageIndexFilter] = [.atLeast("price", 0.0)]
        for sort in [FetchOptions.Sort.id, .newestFirst, .oldestFirst] {
            let cases: [(FetchOptions, Int)] = [
                (FetchOptions(limit: 0, sort: sort), 0),
                (FetchOptions(limit: Int.max, sort: sort), 7),
                (FetchOptions(limit: Int.max, offset: 5, sort: sort), 2),
                (FetchOptions(limit: 3, offset: Int.max, sort: sort), 0),
                (FetchOptions(limit: Int.max, offset: Int.max, sort: sort), 0),
                (FetchOptions(offset: 6, sort: sort), 1),
            ]
            for (options, expected) in cases {
                #expect(try await storage.fetch(Product.self, options: options).count == expected, "\(options)")
                #expect(try await storage.fetch(Product.self, matching: query, options: options).count == expected)
                #expect(
                    try await storage.fetch(
                        Product.self, matching: query, orderedBy: .descending("rating"),
                        options: options
                    ).count == expected)
            }
        }
        for options in [FetchOptions(limit: -1), FetchOptions(offset: -1), FetchOptions(limit: Int.min)] {
            await #expect(throws: LocalStorageError.self) { try await storage.fetch(Product.self, options: options) }
            await #expect(throws: LocalStorageError.self) {
                try await storage.fetch(Product.self, matching: query, options: options)
            }
        }
    }

    // MARK: - Expirations

    @Test(arguments: [
        CacheExpiration.minutes(0), .seconds(-1), .days(-1000), .seconds(-1e10),
        .date(Date(timeIntervalSince1970: 0)), .date(Date(timeIntervalSince1970: -1e9)),
    ])
    func expirationsInThePastExpireAtOnce(expiration: CacheExpiration) async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Note(id: "n", text: "x"), expiration: expiration)
        #expect(try await storage.fetch(Note.self, id: "n") == nil)
        #expect(try await storage.metadata(Note.self, id: "n")?.isExpired == true)
    }

    @Test(arguments: [
        CacheExpiration.seconds(1e9), .days(36_500), .date(Date(timeIntervalSince1970: 9e9)),
    ])
    func expirationsFarInTheFutureDoNotOverflow(expiration: CacheExpiration) async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Note(id: "n", text: "x"), expiration: expiration)
        #expect(try await storage.fetch(Note.self, id: "n") == Note(id: "n", text: "x"))
        #expect(try await storage.purgeExpired() == 0)
    }
}
