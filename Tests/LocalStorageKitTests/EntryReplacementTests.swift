import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// A save that replaces a record moves only the entries that differ (Records/RecordWriter+Entries.swift,
/// `replaceEntries`): against a reference model, with indexed values that often stay the same.
@Suite struct EntryReplacementTests {
    struct Item: LocalStorageIndexed, Equatable {
        let id: String
        var weight: Double?
        var tag: String
        var note: String

        static var storageIndexes: [StorageIndex<Item>] {
            [StorageIndex("weight", \.weight), StorageIndex("tag", \.tag)]
        }
    }

    @Test func replacementsKeepEveryEntryAndCountInStep() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        var random = SplitMix64(seed: 0xE47_12E5)
        var model: [String: Item] = [:]
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        for step in 0..<300 {
            let id = "i\(random.below(60))"
            var item = model[id] ?? Item(id: id, weight: Double(random.below(5)), tag: "t\(random.below(4))", note: "")
            // Mostly a change nothing indexes; sometimes a new weight, a new tag, or none.
            switch random.below(6) {
            case 0: item.weight = random.below(3) == 0 ? nil : Double(random.below(5))
            case 1: item.tag = "t\(random.below(4))"
            default: item.note = "n\(step)"
            }
            switch random.below(8) {
            case 0:
                try await storage.delete(Item.self, id: id)
                model[id] = nil
            case 1:
                try await storage.save(item, expiration: .hours(Double(1 + random.below(3))))
                model[id] = item
            case 2 where model[id] != nil:
                _ = try await storage.update(Item.self, id: id) { $0.note = "u\(step)" }
                model[id]?.note = "u\(step)"
            default:
                try await storage.save(item)
                model[id] = item
            }
            if step % 25 == 24 {
                let report = try maintenance.verify()
                #expect(report.isClean, "step \(step): \(report.problems)")
            }
            let weight = Double(random.below(5))
            #expect(
                try await storage.count(Item.self, matching: [.atMost("weight", weight)])
                    == model.values.filter { ($0.weight ?? .infinity) <= weight }.count, "step \(step)")
            let tag = "t\(random.below(4))"
            let tagged = try await storage.fetch(Item.self, matching: [.equals("tag", tag)])
            #expect(Set(tagged.map(\.id)) == Set(model.values.filter { $0.tag == tag }.map(\.id)), "step \(step)")
        }
        #expect(try await storage.fetch(Item.self).sorted { $0.id < $1.id } == model.values.sorted { $0.id < $1.id })
    }

    /// Saving a record again with the same indexed values puts back an index entry that went missing, as
    /// removing and adding every entry did.
    @Test func aSaveWithTheSameValuesRestoresAMissingIndexEntry() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let item = Item(id: "a", weight: 2, tag: "t1", note: "first")
        try await storage.save(item)
        let schema = try await storage.core.schema(for: Item.self)
        let index = try #require(schema.index(named: "tag"))
        try await storage.core.writer.perform { context in
            let stored = try #require(try context.txn.get(schema.records, key: Array("a".utf8)))
            let key = RecordWriter.indexKey(of: try RecordView(stored).header(in: schema, txn: context.txn), for: index)
            _ = try context.txn.delete(index.dbi, key: key, value: Array("a".utf8))
        }
        #expect(try await storage.fetch(Item.self, matching: [.equals("tag", "t1")]).isEmpty)
        var changed = item
        changed.note = "second"
        try await storage.save(changed)
        #expect(try await storage.fetch(Item.self, matching: [.equals("tag", "t1")]) == [changed])
    }
}
