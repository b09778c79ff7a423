import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// `Gadget` as an app first declares it (one index) and as its next version does (a second index).
struct GadgetV1: LocalStorageIndexed, Equatable {
    static var storageName: String { "Gadget" }
    let id: String
    var kind: String
    var score: Int
    static var storageIndexes: [StorageIndex<Self>] { [.string("kind") { $0.kind }] }
}

struct GadgetV2: LocalStorageIndexed, Equatable {
    static var storageName: String { "Gadget" }
    let id: String
    var kind: String
    var score: Int
    static var storageIndexes: [StorageIndex<Self>] { [.string("kind") { $0.kind }, .number("score") { $0.score }] }
}

/// `Gadget` as another app declares it: `score` as text.
struct GadgetTextScore: LocalStorageIndexed, Equatable {
    static var storageName: String { "Gadget" }
    let id: String
    var kind: String
    var score: Int
    static var storageIndexes: [StorageIndex<Self>] {
        [.string("kind") { $0.kind }, .string("score") { "\($0.score)" }]
    }
}

/// The maintenance listing by an index that records indexed under another declaration are not in yet: it
/// refuses to answer (it answered without them, exit 0) until the app re-indexes them; by an index both
/// declarations have, it answers.
@Suite struct CLIStaleIndexTests {
    @Test func aListingByAnIndexStaleRecordsAreNotInIsRefused() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(
            contentsOf: (0..<10).map { GadgetV1(id: "g\($0)", kind: $0 % 2 == 0 ? "a" : "b", score: $0 % 4) })
        try await storage.save(GadgetV2(id: "new", kind: "a", score: 3))  // registers V2; no indexed query yet
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        let byScore = ListQuery(conditions: [.init(index: "score", value: "3")])
        #expect(throws: MaintenanceError.notReindexed(type: "Gadget", index: "score", count: 10)) {
            try maintenance.list("Gadget", query: byScore)
        }
        #expect(throws: MaintenanceError.notReindexed(type: "Gadget", index: "score", count: 10)) {
            try maintenance.list("Gadget", query: ListQuery(order: .init(index: "score", isDescending: false)))
        }
        // Every record is in `kind`, which both declarations have.
        let byKind = try maintenance.list("Gadget", query: ListQuery(conditions: [.init(index: "kind", value: "a")]))
        #expect(byKind.records.map(\.id) == ["g0", "g2", "g4", "g6", "g8", "new"])
        #expect(try maintenance.list("Gadget").records.count == 11)

        let cli = try await CLIResult.run(
            [
                "list", "Gadget", "--where", "score=3", "--store", storage.configuration.storeDirectory.path,
            ], environment: nil)
        #expect(cli.status == 1)
        #expect(try maintenance.statistics().types.first { $0.name == "Gadget" }?.notReindexed == 10)
        #expect(cli.stderr.contains("10 records of Gadget were indexed under a declaration without"), "\(cli.stderr)")

        // The app's first indexed query re-indexes them; then the listing answers with every record.
        #expect(try await storage.count(GadgetV2.self, matching: [.equals("score", 3)]) == 3)
        let after = try await StoreMaintenance(directory: storage.core.directory)
        #expect(try after.statistics().types.first { $0.name == "Gadget" }?.notReindexed == 0)
        #expect(try after.list("Gadget", query: byScore).records.map(\.id) == ["g3", "g7", "new"])
    }

    /// The maintenance tool takes a type's indexes from the declaration registered last, which flips with whichever
    /// app (or extension) opened the type last: `list --where` by an index only the other declaration has said the
    /// type had no such index, `stats` left its entries out and `types` showed one declaration (trial68 #3). They
    /// now take every declaration's indexes, and a listing by one refuses only while records lack it.
    @Test func theToolSeesTheIndexesOfEveryDeclaration() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(
            contentsOf: (0..<10).map { GadgetV2(id: "g\($0)", kind: $0 % 2 == 0 ? "a" : "b", score: $0 % 4) })
        // The older declaration registers last (an older extension reads the type).
        #expect(try await storage.fetch(GadgetV1.self, id: "g3")?.score == 3)
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        let gadget = try #require(maintenance.types().first { $0.name == "Gadget" })
        #expect(gadget.indexes.map(\.name) == ["kind"])
        #expect(gadget.otherDeclarations.map { $0.indexes.map(\.name) } == [["kind", "score"]])
        let byScore = ListQuery(conditions: [.init(index: "score", value: "3")])
        #expect(try maintenance.list("Gadget", query: byScore).records.map(\.id) == ["g3", "g7"])
        let ordered = try maintenance.list("Gadget", query: ListQuery(order: .init(index: "score", isDescending: true)))
        #expect(Set(ordered.records.prefix(2).map(\.id)) == ["g3", "g7"] && ordered.records.count == 10)
        let indexes = try #require(maintenance.statistics().types.first { $0.name == "Gadget" }?.indexes)
        #expect(indexes.map { "\($0.name) \($0.entries) \($0.isDeclared)" } == ["kind 10 true", "score 10 false"])
        #expect(throws: MaintenanceError.unknownIndex("price", type: "Gadget", known: ["kind", "score"])) {
            try maintenance.list("Gadget", query: ListQuery(conditions: [.init(index: "price", value: "3")]))
        }

        // The tool's own reading of the arguments knows the other declaration's index too.
        let hint = try await CLIResult.run(
            ["list", "Gadget", "--where", "score>=3", "--store", storage.configuration.storeDirectory.path],
            environment: nil)
        #expect(hint.status != 0 && hint.stderr.contains("compares for equality only"), "\(hint.stderr)")

        // A record the older declaration saves is not in `score`: the listing by it refuses again.
        try await storage.save(GadgetV1(id: "old", kind: "a", score: 3))
        let after = try await StoreMaintenance(directory: storage.core.directory)
        #expect(throws: MaintenanceError.notReindexed(type: "Gadget", index: "score", count: 1)) {
            try after.list("Gadget", query: byScore)
        }
        let cli = try await CLIResult.run(
            ["types", "--store", storage.configuration.storeDirectory.path], environment: nil)
        #expect(cli.stdout.contains("another declaration, signature"), "\(cli.stdout)")
        #expect(cli.stdout.contains("kind string, score number"), "\(cli.stdout)")
    }

    /// Two declarations with an index of one name and two kinds, neither the last registered: the listing took the
    /// newest of them whatever the records were in, and refused for good while both apps kept their declarations
    /// (review-70 #6). It takes the one whose kind holds the value and that the fewest records are missing from.
    @Test func aListingChoosesAmongIndexesOfOneNameByKindAndRecords() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(
            contentsOf: (0..<8).map { GadgetV2(id: "g\($0)", kind: "a", score: $0 % 4) })
        #expect(try await storage.fetch(GadgetTextScore.self, id: "g1")?.score == 1)  // registers text `score`
        #expect(try await storage.fetch(GadgetV1.self, id: "g2")?.score == 2)  // the last, without `score`
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        let byScore = ListQuery(conditions: [.init(index: "score", value: "3")])
        #expect(try maintenance.list("Gadget", query: byScore).records.map(\.id) == ["g3", "g7"])
        let ordered = try maintenance.list("Gadget", query: ListQuery(order: .init(index: "score", isDescending: true)))
        #expect(ordered.records.map(\.id) == ["g7", "g3", "g6", "g2", "g5", "g1", "g4", "g0"])
        // Text only the text index can hold: its records are missing from it.
        #expect(throws: MaintenanceError.notReindexed(type: "Gadget", index: "score", count: 8)) {
            try maintenance.list("Gadget", query: ListQuery(conditions: [.init(index: "score", value: "three")]))
        }

        // Once the text declaration saved every record, its index is the one that has them all.
        try await storage.save(contentsOf: (0..<8).map { GadgetTextScore(id: "g\($0)", kind: "a", score: $0 % 4) })
        #expect(try await storage.fetch(GadgetV1.self, id: "g2")?.score == 2)
        let after = try await StoreMaintenance(directory: storage.core.directory)
        let text = try after.list("Gadget", query: ListQuery(order: .init(index: "score", isDescending: false)))
        #expect(text.records.map(\.id) == ["g0", "g4", "g1", "g5", "g2", "g6", "g3", "g7"])
        #expect(text.records.first?.indexes["score"] == .string("0"))
    }

    /// The same when the declaration registered last is the one with the other kind: the listing took the current
    /// declaration's index whenever it had the name, which no record was in (review-73 #3).
    @Test func aListingTakesAnotherDeclarationsIndexOfTheNameWhenTheRecordsAreInIt() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(contentsOf: (0..<8).map { GadgetV2(id: "g\($0)", kind: "a", score: $0 % 4) })
        #expect(try await storage.fetch(GadgetTextScore.self, id: "g1")?.score == 1)  // the last, text `score`
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        let byScore = ListQuery(conditions: [.init(index: "score", value: "3")])
        #expect(try maintenance.list("Gadget", query: byScore).records.map(\.id) == ["g3", "g7"])
    }
}
