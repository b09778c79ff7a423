import Foundation
import Testing

@testable import LocalStorageKit

/// Subscribers that read each change's record (change streams, which decode another process's records one by
/// one) are called after those that only note changes (live queries, a record's watch): another process's commit of
/// 100,000 records held a live query's rerun back until a stream in the same process had decoded all of them
/// (trial94 #5).
@Suite struct ObserverHubOrderTests {
    @Test func subscribersThatReadRecordsComeAfterThoseThatNoteChanges() {
        let hub = ObserverHub()
        let calls = Totals()
        var tokens: [UInt64] = []
        // Readers subscribe first, on two types; the noting ones after them.
        for n in 0..<8 {
            tokens.append(hub.subscribe(n % 2 == 0 ? "A" : "B", readsRecords: true) { _ in calls.append(1) })
        }
        tokens.append(hub.subscribe("A") { _ in calls.append(0) })
        tokens.append(hub.subscribe("B") { _ in calls.append(0) })
        hub.publish([
            PublishedChange(typeName: "A", kind: .externalInserted("a")),
            PublishedChange(typeName: "B", kind: .externalUpdated("b")),
        ])
        #expect(calls.values == [0, 0] + Array(repeating: 1, count: 8))
        // Tokens count from 1: odd ones on A, even ones on B.
        for token in tokens { hub.unsubscribe(token % 2 == 0 ? "B" : "A", token: token) }
        #expect(hub.subscriberCount == 0)
    }
}
