import Foundation
import Testing

@testable import LocalStorageKit

/// The damaged-record policy on the shared tier: a query the server answers that meets bytes which are not a
/// record throws `decodingFailed` naming the type and the id, as a local query does, instead of leaving the
/// record out.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierDamagedRecordTests {
    let tier = SharedTestServer.configuration()

    @Test func aSharedQueryThatMeetsADamagedRecordNamesIt() async throws {
        let storage = try await sharedStore(tier)
        try await storage.save(contentsOf: (0..<6).map(Product.sample))
        let shared = try #require(storage.sharedTier)
        let options = FetchOptions(scope: .shared)
        #expect(try await storage.fetch(Product.self, matching: [.atLeast("price", 0.0)], options: options).count == 6)
        _ = try await shared.connection.call([
            Array("SET".utf8), shared.layout.record(type: Array("Product".utf8), id: Array("sku_4".utf8)),
            [0xDE, 0xAD, 0xBE, 0xEF],
        ])
        await expectDecodingFailed(naming: "Product \"sku_4\"", "fetch") {
            _ = try await storage.fetch(Product.self, matching: [.atLeast("price", 0.0)], options: options)
        }
        await expectDecodingFailed(naming: "Product \"sku_4\"", "count") {
            _ = try await storage.count(
                Product.self, matching: [.atLeast("price", 0.0), .equals("category", "electronics")], options: options)
        }
        // A query that does not meet it is untouched.
        let books = try await storage.fetch(Product.self, matching: [.equals("category", "books")], options: options)
        #expect(books.map(\.id) == ["sku_0", "sku_3"])
    }
}
