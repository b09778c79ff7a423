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

/// Lower limits apply at the next commit, whatever it writes: a type's own once the type is used, the store's
/// once it opens.
@Suite struct LoweredLimitsTests {
    struct Thumb: LocalStorable {
        static var storageName: String { "Thumb" }
        let id: String
        static var storageLimits: StorageLimits? { StorageLimits(maxRecords: 100) }
    }

    /// The next release of the app lowers the type's limit.
    struct SmallerThumb: LocalStorable {
        static var storageName: String { "Thumb" }
        let id: String
        static var storageLimits: StorageLimits? { StorageLimits(maxRecords: 10) }
    }

    @Test func aTypesLoweredLimitHoldsAfterACommitOfAnotherType() async throws {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.expirySweepInterval = nil
        do {
            let storage = try LocalStorage(configuration: configuration)
            try await storage.save(contentsOf: (0..<100).map { Thumb(id: "t\($0)") })
        }
        let storage = try LocalStorage(configuration: configuration)
        _ = try await storage.fetch(SmallerThumb.self, id: "t0")  // the type's first use in this process
        try await storage.save(Note(id: "n", text: ""))
        #expect(try await storage.count(SmallerThumb.self) == 10)
        #expect(try await storage.count(Note.self) == 1)
    }

    @Test func aStoreReopenedWithALowerLimitComesWithinItAtADelete() async throws {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.expirySweepInterval = nil
        do {
            let storage = try LocalStorage(configuration: configuration)
            try await storage.save(contentsOf: (0..<50).map { Note(id: "n\($0)", text: "") })
        }
        configuration.limits = StorageLimits(maxRecords: 20)
        let storage = try LocalStorage(configuration: configuration)
        try await storage.delete(Note.self, id: "n0")
        #expect(try await storage.count(Note.self) == 20)
        #expect(try await storage.statistics().evictions == 29)
    }
}
