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

    /// A record on the server in a later header layout or payload format is a newer version's: a save does not
    /// overwrite it (the put script refuses, as a local save does), and reads say a newer version wrote it.
    @Test(arguments: ["format", "layout"])
    func aSaveDoesNotOverwriteANewerVersionsRecordOnTheServer(change: String) async throws {
        let storage = try await sharedStore(tier)
        try await storage.save(Product.sample(1))
        let shared = try #require(storage.sharedTier)
        let key = shared.layout.record(type: Array("Product".utf8), id: Array("sku_1".utf8))
        var stored = try #require(try await shared.connection.call([Array("GET".utf8), key]).bytes)
        if change == "format" {
            stored[1] = (stored[1] & PayloadEnvelope.mask) | 0x0F
        } else {
            stored[0] = 0xA9
        }
        _ = try await shared.connection.call([Array("SET".utf8), key, stored])
        let write = await decodingFailure { try await storage.save(Product.sample(1)) }
        #expect(write?.contains("later record format") == true, "\(write ?? "")")
        #expect(try await shared.connection.call([Array("GET".utf8), key]).bytes == stored)
        // Another instance, which reads it from the server, is told who wrote it.
        let other = try await sharedStore(tier)
        let read = await decodingFailure { _ = try await other.fetch(Product.self, id: "sku_1") }
        #expect(read?.contains("newer version of LocalStorageKit") == true, "\(read ?? "")")
    }

    /// A compact record header (0xA8) holds one store's own slot and declaration numbers, so no instance writes it to
    /// the server: one found there (a whole one, or one of 16 bytes, shorter than any named header) is damage.
    /// Reads, `setExpiration` and `update` say so instead of reading it with their own numbers or trapping on it, a
    /// notice of it drops the local copy, and a save overwrites it (the put script takes it for damage, not for a
    /// newer version's record).
    @Test(arguments: [false, true])
    func aCompactHeaderOnTheServerIsDamage(minimal: Bool) async throws {
        let storage = try await sharedStore(tier)
        try await storage.save(Product.sample(1))
        let schema = try await storage.core.schema(for: Product.self)
        let shared = try #require(storage.sharedTier)
        let key = shared.layout.record(type: Array("Product".utf8), id: Array("sku_1".utf8))
        let stored = try #require(try await shared.connection.call([Array("GET".utf8), key]).bytes)
        let compact = try stored.withUnsafeBytes { buffer in
            let view = try RecordView(buffer)
            var header = try view.header(in: schema, txn: nil)
            header.layout = .compact
            if minimal {
                header.indexValues = []
                header.declarationNumber = 0
                header.createdAt = header.updatedAt
                header.expiresAt = 0
                // The shortest compact header there is, as versions before the creation distance's fixed width
                // wrote it: that distance in one byte instead of seven (right after the one-byte expiry code).
                var bytes = try header.serialized(payload: [])
                bytes.removeSubrange(13..<(13 + RecordHeader.creationDistanceBytes - 1))
                bytes[2] = UInt8(bytes.count)
                bytes[3] = 0
                return bytes
            }
            return try header.laidOut(for: schema).serialized(payload: Array(view.payload))
        }
        #expect(compact[0] == RecordHeader.compactMagic && (!minimal || compact.count == 16))
        _ = try await shared.connection.call([Array("SET".utf8), key, compact])

        let other = try await sharedStore(tier)
        let read = await decodingFailure { _ = try await other.fetch(Product.self, id: "sku_1") }
        #expect(read?.contains("compact record header") == true, "\(read ?? "")")
        let expiry = await decodingFailure {
            try await other.setExpiration(Product.self, id: "sku_1", .seconds(60))
        }
        #expect(expiry?.contains("compact record header") == true, "\(expiry ?? "")")
        let update = await decodingFailure { _ = try await other.update(Product.self, id: "sku_1") { $0.rating = 5 } }
        #expect(update?.contains("compact record header") == true, "\(update ?? "")")

        // A notice carrying the compact bytes drops the local copy (which reads then take to the server) instead of
        // failing the writer's transaction, which the catch-up would replay for ever.
        #expect(try await storage.fetch(Product.self, id: "sku_1") == Product.sample(1))  // The local copy.
        try await storage.core.writer.perform { context in
            try shared.apply(
                SharedTier.LocalChange(kind: UInt8(ascii: "P"), type: "Product", id: "sku_1", record: compact),
                at: Int64.max / 2, context: context)
        }
        let local = try storage.core.environment.read { txn in try txn.get(schema.records, key: Array("sku_1".utf8)) }
        #expect(local == nil)

        var changed = Product.sample(1)
        changed.title = "saved over the compact header"
        try await storage.save(changed)
        #expect(try await other.fetch(Product.self, id: "sku_1")?.title == "saved over the compact header")
        let now = try #require(try await shared.connection.call([Array("GET".utf8), key]).bytes)
        #expect(now.first == RecordHeader.magic)
    }

    /// Damage that is no newer version's record (an empty value, a short one, this layout's magic with an unknown
    /// format but a header length out of bounds) is overwritten by a save, as before.
    @Test(arguments: [[], [0xA7], Array(repeating: 0xA7, count: 50)] as [[UInt8]])
    func aSaveOverwritesDamageOnTheServer(damage: [UInt8]) async throws {
        let storage = try await sharedStore(tier)
        try await storage.save(Product.sample(1))
        let shared = try #require(storage.sharedTier)
        let key = shared.layout.record(type: Array("Product".utf8), id: Array("sku_1".utf8))
        _ = try await shared.connection.call([Array("SET".utf8), key, damage])
        var changed = Product.sample(1)
        changed.title = "saved over the damage"
        try await storage.save(changed)
        let other = try await sharedStore(tier)
        #expect(try await other.fetch(Product.self, id: "sku_1")?.title == "saved over the damage")
    }
}
