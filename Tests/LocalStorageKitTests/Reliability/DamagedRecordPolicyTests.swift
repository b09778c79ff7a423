import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// One policy for a record whose bytes cannot be read (issue 22): a query, a count or a decode that meets it
/// throws `decodingFailed` naming the type and the id; the maintenance statistics count it as damaged; `verify`
/// reports it; repairing removes it and every figure agrees again. Nothing counts it as 0 bytes or leaves it
/// out silently.
@Suite struct DamagedRecordPolicyTests {
    /// Replaces the stored bytes of one record, leaving its index entries and the counters as they were.
    private func damage(
        _ id: String, in storage: LocalStorage, with bytes: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF]
    )
        async throws
    {
        let schema = try await storage.core.schema(for: Product.self)
        try await storage.core.writer.perform { context in
            try context.txn.put(schema.records, key: Array(id.utf8), value: bytes)
        }
    }

    @Test func statisticsCountADamagedRecordAndAgreeAfterTheRepair() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: (0..<8).map(Product.sample))
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        let healthy = try maintenance.statistics()
        try await damage("sku_5", in: storage)

        // The statistics count it as damaged, not as a record of 0 payload bytes; a query and a count that
        // meet it name it.
        #expect(healthy.damaged == 0)
        let damaged = try maintenance.statistics()
        #expect(damaged.damaged == 1)
        #expect(damaged.types.map(\.damaged) == [1])
        #expect(damaged.records == 8)
        await expectDecodingFailed(naming: "Product \"sku_5\"", "query") {
            _ = try await storage.fetch(Product.self, matching: [.atLeast("price", 0.0)])
        }
        await expectDecodingFailed(naming: "Product \"sku_5\"", "count") {
            _ = try await storage.count(
                Product.self, matching: [.atLeast("price", 0.0), .equals("category", "toys")])
        }
        let report = try maintenance.verify()
        #expect(report.problems.map(\.kind) == [.damagedRecord])
        #expect(report.problems.first?.id == "sku_5")

        // The repair removes it; every figure then agrees with what the store holds.
        let repaired = try await maintenance.repair()
        #expect(repaired.isClean, "\(repaired.problems)")
        #expect(repaired.removedRecords.map(\.id) == ["sku_5"])
        let after = try maintenance.statistics()
        let kept = (0..<8).filter { $0 != 5 }
        var sizes = 0
        for n in kept { sizes += try #require(try await storage.metadata(Product.self, id: "sku_\(n)")).sizeInBytes }
        #expect(after.records == kept.count)
        #expect(after.payloadBytes == sizes)
        #expect(healthy.payloadBytes > sizes)
        #expect(try await storage.statistics().payloadBytes == sizes)
        #expect(try await storage.count(Product.self) == kept.count)
        #expect(try await storage.fetch(Product.self, matching: [.atLeast("price", 0.0)]).count == kept.count)
        #expect(
            try await storage.count(Product.self, matching: [.atLeast("price", 0.0), .equals("category", "toys")])
                == kept.filter { Product.sample($0).category == "toys" }.count)
    }

    @Test func deletingADamagedRecordTakesOutWhatTheCounterHeldForIt() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: (0..<4).map(Product.sample))
        // Damaged through the writer's own path (a replica put keeps the counter in step with the bytes).
        let schema = try await storage.core.schema(for: Product.self)
        let garbage: [UInt8] = [0xA7, 1, 2, 3, 4, 5]
        try await storage.core.writer.perform { context in
            try RecordWriter.delete(id: "sku_2", key: Array("sku_2".utf8), schema: schema, context: context)
            try context.txn.put(schema.records, key: Array("sku_2".utf8), value: garbage)
            try CountTree.addPayloadBytes(
                garbage.withUnsafeBytes { RecordWriter.payloadSize(of: $0) }, schema: schema, txn: context.txn)
        }
        try await storage.delete(Product.self, id: "sku_2")
        var sizes = 0
        for n in [0, 1, 3] {
            sizes += try #require(try await storage.metadata(Product.self, id: "sku_\(n)")).sizeInBytes
        }
        #expect(try await storage.statistics().payloadBytes == sizes)
        #expect(try await StoreMaintenance(directory: storage.core.directory).verify().isClean)
    }

    /// A damaged map inside a binary payload (its header and length intact) fails the decode instead of
    /// decoding as a value with fewer members: `allKeys`, `contains` and `decodeNil()` cannot throw, so the
    /// decoder notes what they met and throws at the end.
    @Test func aBinaryPayloadDamagedInsideAMapFailsToDecodeInsteadOfLosingMembers() throws {
        var bytes = try BinaryEncoder().encode(["a": 1, "b": 2, "c": 3])
        // Version, map tag, count (1 byte), body length (1 byte), then the first entry's key length.
        #expect(try bytes.withUnsafeBytes { try BinaryDecoder().decode([String: Int].self, from: $0) }.count == 3)
        bytes[4] = 0x7F
        #expect(throws: BinaryCodecError.self) {
            _ = try bytes.withUnsafeBytes { try BinaryDecoder().decode([String: Int].self, from: $0) }
        }
        #expect(throws: BinaryCodecError.self) {
            _ = try bytes.withUnsafeBytes { try BinaryDecoder().decode(Probe.self, from: $0) }
        }
    }

    /// Asks `contains` before decoding, as hand-written `init(from:)` often does.
    private struct Probe: Decodable {
        var a: Int?
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            a = container.contains(.a) ? try container.decode(Int.self, forKey: .a) : nil
        }
        enum Key: String, CodingKey { case a }
    }
}

/// Expects `body` to throw `decodingFailed` whose reason contains `needle` (a type and an id, `Product "sku_4"`).
func expectDecodingFailed(
    naming needle: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("\(what): no error", sourceLocation: sourceLocation)
    } catch LocalStorageError.decodingFailed(let reason) {
        #expect(reason.contains(needle), "\(what): \(reason)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(what): threw \(error)", sourceLocation: sourceLocation)
    }
}
