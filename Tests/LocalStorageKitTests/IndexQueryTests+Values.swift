import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// Exact values, long strings, many indexes per type, and a changed declaration.
extension IndexQueryTests {
    @Test func exactNumbersAcrossTypesAndBeyondDoublePrecision() async throws {
        struct Big: LocalStorageIndexed {
            let id: String
            var value: Int64
            static var storageIndexes: [StorageIndex<Big>] { [StorageIndex("value", \.value)] }
        }
        let storage = try LocalStorage(configuration: .inMemory)
        let base: Int64 = 1 << 53
        try await storage.save(contentsOf: (0..<5).map { Big(id: "b\($0)", value: base + Int64($0)) })
        #expect(try await storage.fetch(Big.self, matching: [.equals("value", base + 1)]).map(\.id) == ["b1"])
        #expect(try await storage.count(Big.self, matching: [.greaterThan("value", UInt64(base) + 2)]) == 2)
        #expect(try await storage.count(Big.self, matching: [.atLeast("value", Double(base))]) == 5)
        let descending = try await storage.fetch(Big.self, matching: [], orderedBy: .descending("value"))
        #expect(descending.map(\.id) == ["b4", "b3", "b2", "b1", "b0"])
    }

    @Test func longStringValuesStayExact() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let shared = String(repeating: "p", count: 500)
        let items = ["z", "a", "m"].enumerated().map { n, tail in
            Item(id: "l\(n)", name: shared + tail, score: nil, weight: nil, tag: "t")
        }
        try await storage.save(contentsOf: items)
        #expect(try await storage.fetch(Item.self, matching: [.equals("name", shared + "m")]).map(\.id) == ["l2"])
        #expect(try await storage.count(Item.self, matching: [.greaterThan("name", shared + "a")]) == 2)
        let sorted = try await storage.fetch(Item.self, matching: [], orderedBy: .ascending("name"))
        #expect(sorted.map(\.id) == ["l1", "l2", "l0"])
        let reversed = try await storage.fetch(Item.self, matching: [], orderedBy: .descending("name"))
        #expect(reversed.map(\.id) == ["l0", "l2", "l1"])
        #expect(try await storage.count(Item.self, matching: [.hasPrefix("name", shared + "z")]) == 1)
        // Values whose index keys are cut to the same bytes are still different values of `.oneOf`, in any order
        // of the list, through every path that reads a filter: fetch, count, page, delete.
        for values in [
            [shared + "a", shared + "m"], [shared + "m", shared + "a"], [shared + "z", shared + "m", shared],
        ] {
            let filter = StorageIndexFilter.oneOf("name", values)
            let expected = items.filter { values.contains($0.name ?? "") }.map(\.id).sorted()
            #expect(try await storage.fetch(Item.self, matching: [filter]).map(\.id).sorted() == expected, "\(values)")
            #expect(try await storage.count(Item.self, matching: [filter]) == expected.count, "\(values)")
            let page = try await storage.page(Item.self, matching: [filter], page: 1, pageSize: 5)
            #expect(page.items.map(\.id).sorted() == expected && page.totalCount == expected.count, "\(values)")
        }
        #expect(try await storage.delete(Item.self, matching: [.oneOf("name", [shared + "z", shared + "a"])]) == 2)
        #expect(try await storage.fetch(Item.self, matching: []).map(\.id) == ["l2"])
    }

    @Test func sixteenIndexesPerType() async throws {
        struct Wide: LocalStorageIndexed {
            let id: String
            var values: [Int]
            static var storageIndexes: [StorageIndex<Wide>] {
                (0..<20).map { n in .number("v\(n)") { $0.values[n] } }
            }
        }
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<10).map { k in Wide(id: "w\(k)", values: (0..<20).map { $0 * k }) })
        for n in [0, 7, 15, 19] {
            #expect(try await storage.count(Wide.self, matching: [.atLeast("v\(n)", n * 5)]) == (n == 0 ? 10 : 5))
        }
    }

    @Test func changedDeclarationReindexesOnFirstQuery() async throws {
        struct V1: LocalStorageIndexed {
            static var storageName: String { "Shape" }
            let id: String
            var side: Int
            var color: String
            static var storageIndexes: [StorageIndex<V1>] { [.number("side") { $0.side }] }
        }
        struct V2: LocalStorageIndexed {
            static var storageName: String { "Shape" }
            let id: String
            var side: Int
            var color: String
            static var storageIndexes: [StorageIndex<V2>] {
                [.string("color") { $0.color }, .number("area") { $0.side * $0.side }]
            }
        }
        let directory = temporaryDirectory()
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            try await storage.save(
                contentsOf: (1...2500).map { V1(id: "s\($0)", side: $0 % 10, color: $0 % 2 == 0 ? "red" : "blue") })
            #expect(try await storage.count(V1.self, matching: [.equals("side", 3)]) == 250)
        }
        let reopened = try LocalStorage(configuration: diskConfiguration(directory))
        #expect(try await reopened.count(V2.self, matching: [.equals("color", "red")]) == 1250)
        #expect(try await reopened.count(V2.self, matching: [.atLeast("area", 49)]) == 750)
        await #expect(throws: LocalStorageError.unknownIndex("side")) {
            try await reopened.count(V2.self, matching: [.equals("side", 3)])
        }
        let top = try await reopened.fetch(
            V2.self, matching: [.equals("color", "blue")], orderedBy: .descending("area"),
            options: FetchOptions(limit: 3))
        #expect(top.allSatisfy { $0.side == 9 && $0.color == "blue" })
    }
}
