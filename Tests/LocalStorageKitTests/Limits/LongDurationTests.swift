import Foundation
import Testing

@testable import LocalStorageKit

/// Durations in the configuration as long as a `Duration` holds: a store works with them (its waits last a
/// century at most) instead of ending the process in `Task.sleep`.
@Suite struct LongDurationTests {
    @Test func theLongestIntervalsOpenAStoreThatWorks() async throws {
        var configuration = diskConfiguration(temporaryDirectory())
        configuration.expirySweepInterval = .seconds(Int64.max)
        configuration.externalChangePollInterval = .seconds(Int64.max)
        configuration.liveQueryCoalescing = .seconds(Int64.max)
        let storage = try LocalStorage(configuration: configuration)
        var rows = storage.updates(of: Note.self).makeAsyncIterator()
        #expect(try await rows.next()?.isEmpty == true)
        let changes = storage.changes(of: Note.self)
        var events = changes.makeAsyncIterator()
        for index in 0..<3 {
            try await storage.save(Note(id: "n\(index)", text: "\(index)"))
            // Each save reaches the change stream; the live query's coalescing window of 2⁶³ s (cut to a
            // century) starts waiting after the first burst.
            guard case .inserted(let note) = await events.next() else {
                Issue.record("no insert of n\(index) in the change stream")
                return
            }
            #expect(note.id == "n\(index)")
        }
        #expect(try await storage.count(Note.self) == 3)
    }
}
