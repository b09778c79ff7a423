import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// Which limits a type runs under: its own, the store's, never another type's.
@Suite struct LimitRegistrationTests {
    struct Stock: LocalStorable {
        let id: String
        var count: Int
        static var storageLimits: StorageLimits? { StorageLimits(maxRecords: 2) }
    }

    struct Post: LocalStorable {
        let id: String
    }

    struct SoldOut: Error {}

    /// A limited type first used in a write transaction that throws: its type number goes back to the store,
    /// and the next new type (without limits) is given it. That type keeps every record it saves.
    @Test func aTypeNeverRunsUnderTheLimitsOfATypeWhoseRegistrationRolledBack() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration(temporaryDirectory()))
        await #expect(throws: SoldOut.self) {
            try await storage.write { tx in
                guard try tx.fetch(Stock.self, id: "s") != nil else { throw SoldOut() }
            }
        }
        try await storage.save(contentsOf: (0..<10).map { Post(id: "p\($0)") })
        #expect(try await storage.count(Post.self) == 10)
        #expect(try await storage.statistics(for: Post.self).limits == nil)
        // The limited type, used again, still keeps its own limit.
        try await storage.save(contentsOf: (0..<5).map { Stock(id: "s\($0)", count: $0) })
        #expect(try await storage.count(Stock.self) == 2)
        #expect(try await storage.count(Post.self) == 10)
    }
}

/// `StorageLimits()` sets no bound: it is the same setting as `nil`, in one process as across processes.
@Suite struct UnboundedLimitsTests {
    @Test func storageLimitsWithoutBoundsOpenBesideNoLimits() async throws {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.limits = nil
        let first = try LocalStorage(configuration: configuration)
        configuration.limits = StorageLimits()
        let second = try LocalStorage(configuration: configuration)
        try await second.save(Note(id: "a", text: "a"))
        #expect(try await first.fetch(Note.self, id: "a")?.text == "a")
        #expect(try await second.statistics().limits == nil)
        // A real bound still differs.
        configuration.limits = StorageLimits(maxRecords: 10)
        #expect(throws: LocalStorageError.self) { try LocalStorage(configuration: configuration) }
    }
}

/// Uses noted for eviction reach the store when it closes, not only at this process's next commit.
@Suite struct ReadNotesAtCloseTests {
    @Test func readsJustBeforeACloseCountForEviction() async throws {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.limits = StorageLimits(maxRecords: 3)
        configuration.evictionPolicy = .leastRecentlyUsed
        configuration.expirySweepInterval = nil
        do {
            let storage = try LocalStorage(configuration: configuration)
            for id in ["a", "b", "c"] { try await storage.save(Note(id: id, text: id)) }
        }
        // A short-lived reader uses "a" and closes without writing.
        do {
            let storage = try LocalStorage(configuration: configuration)
            for _ in 0..<3 { #expect(try await storage.fetch(Note.self, id: "a") != nil) }
        }
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "d", text: "d"))
        // "a" was used last of the three: "b" (written, never read) goes first.
        #expect(try await storage.count(Note.self) == 3)
        #expect(try await storage.metadata(Note.self, id: "a") != nil)
        #expect(try await storage.metadata(Note.self, id: "b") == nil)
    }
}
