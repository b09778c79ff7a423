import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

/// Observers that appear while the writer is at work, and reads that hand the writer work: what each sees
/// once the writer is done, made deterministic by doing the racing step inside the writer's transaction or
/// while the writer is held.
@Suite struct ObserverRaceTests {
    /// An observer subscribes, then reads its first snapshot. A commit that wrote the type while nobody
    /// observed it, and committed after that read, published nothing: the observer never heard of it. The
    /// commit now tells the observers that appeared meanwhile (`.touched`).
    @Test func aCommitTellsAnObserverThatSubscribedWhileItRan() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let core = storage.core
        let schema = try await core.schema(for: Note.self)
        let received = Mutex<[PublishedChange.Kind]>([])
        let token = Mutex<UInt64?>(nil)
        let record = try PreparedRecord(encoding: Note(id: "a", text: "x"), schema: schema, format: .binary)
        try await core.writer.perform { context in
            try RecordWriter.put(record, expiresAt: 0, schema: schema, context: context)
            // The observer arrives after the write decided nobody observed the type, before the commit.
            let subscribed = core.hub.subscribe(schema.name) { changes in
                received.withLock { $0 += changes.map(\.kind) }
            }
            token.withLock { $0 = subscribed }
        }
        defer { token.withLock { $0 }.map { core.hub.unsubscribe(schema.name, token: $0) } }
        let kinds = received.withLock { $0 }
        #expect(kinds.count == 1)
        if let kind = kinds.first, case .touched = kind {
        } else {
            Issue.record("expected .touched, got \(kinds)")
        }
        // A commit that finds the observer there from the start publishes the change itself, once.
        received.withLock { $0 = [] }
        try await storage.save(Note(id: "b", text: "y"))
        let later = received.withLock { $0 }
        #expect(later.count == 1)
        if let kind = later.first, case .touched = kind { Issue.record("a second, needless .touched") }
    }

    /// A read that meets an expired record hands its purge to the writer and returns while the writer is
    /// held (issue 11); a `metadata` of that record then waits for the purge, and one of another record
    /// does not.
    @Test func metadataWaitsForThePurgeOfItsOwnRecordOnly() async throws {
        var configuration = diskConfiguration()
        configuration.autoPurgeExpiredOnRead = true
        try await withStore(configuration) { storage async throws in
            try await storage.save(Note(id: "old", text: ""), expiration: .date(Date(timeIntervalSinceNow: -5)))
            try await storage.save(Note(id: "other", text: ""))
            let hold = try await WriterHold(storage)
            #expect(try await storage.fetch(Note.self, id: "old") == nil)
            #expect(try await storage.metadata(Note.self, id: "other") != nil)
            let waiting = Task { try await storage.metadata(Note.self, id: "old") }
            try await waitUntil("metadata waits for the purge") { storage.core.readLeftovers.waiterCount == 1 }
            try await hold.release()
            #expect(try await waiting.value == nil)
            #expect(storage.core.readLeftovers.waiterCount == 0)
        }
    }

    /// A `metadata` waiting for a purge returns when its task is cancelled (with what the store holds then).
    @Test func aWaitingMetadataEndsWhenCancelled() async throws {
        var configuration = diskConfiguration()
        configuration.autoPurgeExpiredOnRead = true
        try await withStore(configuration) { storage async throws in
            try await storage.save(Note(id: "old", text: ""), expiration: .date(Date(timeIntervalSinceNow: -5)))
            let hold = try await WriterHold(storage)
            #expect(try await storage.fetch(Note.self, id: "old") == nil)
            let waiting = Task { try await storage.metadata(Note.self, id: "old") }
            try await waitUntil("metadata waits for the purge") { storage.core.readLeftovers.waiterCount == 1 }
            waiting.cancel()
            let early = try await waiting.value
            #expect(early?.isExpired == true)
            try await hold.release()
            #expect(try await storage.metadata(Note.self, id: "old") == nil)
        }
    }
}
