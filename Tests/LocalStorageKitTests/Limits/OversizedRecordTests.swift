import Foundation
import Testing

@testable import LocalStorageKit

/// A record that can never fit a `maxBytes` limit is refused before anything is evicted.
@Suite struct OversizedRecordTests {
    struct Blob: LocalStorable, Equatable {
        let id: String
        var text: String
    }

    struct SmallBlob: LocalStorable, Equatable {
        let id: String
        var text: String
        static var storageLimits: StorageLimits? { StorageLimits(maxBytes: 5_000) }
    }

    @Test func aRecordLargerThanTheStoreLimitIsRefusedAndTheCacheStays() async throws {
        var configuration = diskConfiguration()
        configuration.limits = StorageLimits(maxBytes: 20_000)
        let storage = try LocalStorage(configuration: configuration)
        let small = (0..<37).map { Blob(id: "b\($0)", text: String(repeating: "x", count: 400)) }
        try await storage.save(contentsOf: small)
        let before = Set(try await storage.fetch(Blob.self).map(\.id))
        #expect(before.count == 37)
        let big = Blob(id: "big", text: String(repeating: "y", count: 30_000))
        await expectRecordTooLarge("big", limit: 20_000) { try await storage.save(big) }
        await expectRecordTooLarge("big", limit: 20_000) { try await storage.save(contentsOf: [small[0], big]) }
        await expectRecordTooLarge("big", limit: 20_000) { try await storage.write { tx in try tx.save(big) } }
        await expectRecordTooLarge("b1", limit: 20_000) {
            _ = try await storage.update(Blob.self, id: "b1") { $0.text = String(repeating: "z", count: 25_000) }
        }
        #expect(Set(try await storage.fetch(Blob.self).map(\.id)) == before)
        #expect(try await storage.fetch(Blob.self, id: "b1") == small[1])
        #expect(try await storage.statistics().evictions == 0)
    }

    @Test func aRecordLargerThanItsTypeLimitIsRefused() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(
            contentsOf: (0..<5).map { SmallBlob(id: "s\($0)", text: String(repeating: "x", count: 500)) })
        let big = SmallBlob(id: "big", text: String(repeating: "y", count: 6_000))
        await expectRecordTooLarge("big", limit: 5_000) { try await storage.save(big) }
        await expectRecordTooLarge("big", limit: 5_000) {
            try await storage.write { tx in try tx.save(contentsOf: [big]) }
        }
        #expect(try await storage.count(SmallBlob.self) == 5)
    }

    /// The check counts the payload as stored, as the limits do: in an encrypted store a record whose encoded
    /// payload fit but whose sealed one did not was accepted, evicted every other record of its scope and then
    /// itself, and `save` returned; in a compressed store a record that fits once compressed was refused.
    @Test func theLimitIsCheckedAtTheStoredSize() async throws {
        let limit = 5_000
        var encrypted = EncryptionTests.configuration(temporaryDirectory())
        encrypted.expirySweepInterval = nil
        try await withStore(encrypted) { storage async throws in
            try await storage.save(
                contentsOf: (0..<5).map { SmallBlob(id: "s\($0)", text: String(repeating: "x", count: 500)) })
            // The longest text whose encoded payload is just under the limit: sealing adds its nonce and tag.
            var length = limit
            while try PayloadCodec.encode(
                SmallBlob(id: "big", text: String(repeating: "y", count: length)), as: .binary
            )
            .count > limit - 4 {
                length -= 1
            }
            let big = SmallBlob(id: "big", text: String(repeating: "y", count: length))
            await expectRecordTooLarge("big", limit: limit) { try await storage.save(big) }
            #expect(try await storage.count(SmallBlob.self) == 5)
            #expect(try await storage.statistics().evictions == 0)
        }
        var compressed = diskConfiguration()
        compressed.compression = .zstd()
        try await withStore(compressed) { storage async throws in
            let repetitive = SmallBlob(id: "zeros", text: String(repeating: "pending invoice ", count: 1_000))
            try await storage.save(repetitive)
            #expect(try await storage.fetch(SmallBlob.self, id: "zeros") == repetitive)
            #expect(try await storage.statistics(for: SmallBlob.self).payloadBytes <= limit)
        }
    }
}

/// Expects `body` to throw `recordTooLarge` for `id` with `limit` (and a size above it).
func expectRecordTooLarge(
    _ id: String, limit: Int, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
) async {
    do {
        try await body()
        Issue.record("no error thrown", sourceLocation: sourceLocation)
    } catch LocalStorageError.recordTooLarge(let thrownID, let size, let thrownLimit) {
        #expect(thrownID == id && size > limit && thrownLimit == limit, sourceLocation: sourceLocation)
    } catch {
        Issue.record("threw \(error)", sourceLocation: sourceLocation)
    }
}
