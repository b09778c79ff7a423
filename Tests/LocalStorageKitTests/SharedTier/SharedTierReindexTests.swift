import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// A sheet as one app version declares it: indexes `a` and `b`.
private struct SheetA: LocalStorageIndexed, Equatable {
    static var storageName: String { "ReindexSheet" }
    let id: String
    var a: String?
    var b: Int

    static var storageIndexes: [StorageIndex<SheetA>] { [StorageIndex("a", \.a), StorageIndex("b", \.b)] }
}

/// The same sheet as another app version declares it: indexes `b` and `c`.
private struct SheetB: LocalStorageIndexed, Equatable {
    static var storageName: String { "ReindexSheet" }
    let id: String
    var b: Int
    var c: String

    static var storageIndexes: [StorageIndex<SheetB>] { [StorageIndex("b", \.b), StorageIndex("c", \.c)] }
}

/// The put script moves a record's index members on the server from its old pairs to its new ones, comparing
/// them in place when both come from one declaration. Checked against a model: after random saves and
/// deletes by two declarations of one type, the server's sets hold exactly what saving the final records
/// afresh into an empty namespace gives.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierReindexTests {
    private enum Final {
        case a(SheetA)
        case b(SheetB)
    }

    @Test func indexMembersAfterRandomWritesMatchTheFinalRecordsSavedAfresh() async throws {
        var random = SplitMix64(seed: 45)
        func below(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
        let tier = SharedTestServer.configuration()
        var freshTier = SharedTestServer.configuration()
        freshTier.namespace = tier.namespace + "-fresh"
        let (oldApp, newApp) = (try await sharedStore(tier), try await sharedStore(tier))
        let words = ["", "x", "y", "é", "z\u{0}z"]
        var model: [String: Final] = [:]
        for _ in 0..<300 {
            let id = "s\(below(12))"
            switch below(5) {
            case 0:
                if below(2) == 0 {
                    try await oldApp.delete(SheetA.self, id: id)
                } else {
                    try await newApp.delete(SheetB.self, id: id)
                }
                model[id] = nil
            case 1, 2:
                // Often the same values again, or only one of them changed.
                let sheet = SheetA(id: id, a: below(4) == 0 ? nil : words[below(words.count)], b: below(3))
                try await oldApp.save(sheet)
                model[id] = .a(sheet)
            default:
                let sheet = SheetB(id: id, b: below(3), c: words[below(words.count)])
                try await newApp.save(sheet)
                model[id] = .b(sheet)
            }
        }
        let (freshOld, freshNew) = (try await sharedStore(freshTier), try await sharedStore(freshTier))
        for final in model.values {
            switch final {
            case .a(let sheet): try await freshOld.save(sheet)
            case .b(let sheet): try await freshNew.save(sheet)
            }
        }

        let type = SharedTierLayout.escape(SheetA.storageName)
        func members(_ storage: LocalStorage, _ key: (SharedTierLayout) -> [UInt8]) async throws -> [[UInt8]] {
            let tier = try #require(storage.sharedTier)
            let reply = try await tier.connection.call([
                Array("ZRANGE".utf8), key(tier.layout), Array("0".utf8), Array("-1".utf8),
            ])
            return try #require(reply.elements).compactMap(\.bytes)
        }
        var checked = 0
        for name in ["a", "b", "c"] {
            let written = try await members(oldApp) { $0.index(type: type, name: name) }
            let expected = try await members(freshOld) { $0.index(type: type, name: name) }
            #expect(written == expected, "index \(name)")
            checked += expected.count
        }
        #expect(checked > 0)
        #expect(try await members(oldApp) { $0.ids(type: type) } == model.keys.sorted().map { Array($0.utf8) })
        // The update-time set holds each live id once (its members start with an 8-byte time).
        let updated = try await members(oldApp) { $0.updated(type: type) }.map { Array($0.dropFirst(8)) }
        #expect(updated.sorted { $0.lexicographicallyPrecedes($1) } == model.keys.sorted().map { Array($0.utf8) })
    }
}

/// A replica of a record written with a declaration the near cache does not describe (another app version, on
/// another host) gets this store's newest declaration's entries. It carried the writer's signature, so once this
/// host registered that declaration the copy read as current, without entries in the indexes it adds: a near-cache
/// query by one of them missed it (review-69 #1). It carries the unknown signature now, and is re-indexed.
@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct SharedTierUndescribedReplicaTests {
    @Test func aReplicaOfAnUndescribedDeclarationIsReindexedWhenThatDeclarationComes() async throws {
        let tier = SharedTestServer.configuration()
        let reader = try await sharedStore(tier)
        // SheetA's declaration is the near cache's (registered by a read).
        #expect(try await reader.count(SheetA.self, matching: [], options: .nearCache) == 0)
        let writer = try await sharedStore(tier)
        try await writer.save(contentsOf: (1..<6).map { SheetB(id: "s\($0)", b: $0 % 2, c: "k") })
        let schema = try await reader.core.schema(for: SheetA.self)
        // The replicas arrive without an indexed read of the type here (which would re-index them as SheetA's).
        #expect(
            try await waitUntil {
                try reader.core.environment.read { txn in try txn.entryCount(schema.records) } == 5
            })
        let found = try await reader.fetch(SheetB.self, matching: [.equals("c", "k")], options: .nearCache)
        #expect(Set(found.map(\.id)) == Set((1..<6).map { "s\($0)" }))
    }
}
