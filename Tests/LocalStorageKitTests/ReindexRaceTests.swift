import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

/// A stored type with two indexes, as one app declares it.
struct DocFull: LocalStorageIndexed {
    static var storageName: String { "Doc" }
    let id: String
    var a: Int
    var c: Int
    static var storageIndexes: [StorageIndex<DocFull>] { [StorageIndex("a", \.a), StorageIndex("c", \.c)] }
}

/// The same stored type as another declaration (an app extension) has it: without `c`.
struct DocLite: LocalStorageIndexed {
    static var storageName: String { "Doc" }
    let id: String
    var a: Int
    var c: Int
    static var storageIndexes: [StorageIndex<DocLite>] { [StorageIndex("a", \.a)] }
}

/// An indexed read while another declaration of the type keeps writing: every re-index is followed by another
/// stale record before the read, and the read still answers with every record.
@Suite struct ReindexRaceTests {
    @Test func anIndexedReadNeverAnswersFromStaleEntries() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration(temporaryDirectory()))
        try await storage.save(contentsOf: (0..<50).map { DocFull(id: "d\($0)", a: $0, c: 1) })
        try await storage.save(DocLite(id: "d0", a: 0, c: 1))  // stale for DocFull: not in its index c
        let writes = Atomic<Int>(0)
        storage.core.afterReindex.withLock {
            $0 = {
                // Another declaration saves right after each re-index, before the read.
                let next = writes.add(1, ordering: .relaxed).newValue
                try await storage.save(DocLite(id: "d\(next)", a: next, c: 1))
            }
        }
        for round in 0..<3 {
            #expect(try await storage.count(DocFull.self, matching: [.equals("c", 1)]) == 50, "round \(round)")
            let ids = try await storage.fetch(DocFull.self, matching: [.equals("c", 1)]).map(\.id)
            #expect(ids.count == 50, "round \(round)")
        }
        #expect(writes.load(ordering: .relaxed) > 0)
    }
}
