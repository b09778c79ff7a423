import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// What a load through the cache leaves behind when nobody waits for it any more: a flight given up at its timeout
/// whose loader ignores the cancellation (review-105 F4).
@Suite struct LoadCancellationTests {
    /// A flight given up at its timeout waited for its loader's outcome, however long the loader ignored the
    /// cancellation, and kept its record watches (and with them the follower of other processes' commits, and so
    /// the store) meanwhile.
    @Test func aGivenUpLoadWhoseLoaderIgnoresTheCancellationKeepsNoWatch() async throws {
        let clock = VirtualClock()
        var configuration = diskConfiguration(temporaryDirectory())
        configuration.clock = clock
        let storage = try LocalStorage(configuration: configuration)
        let gate = LoadGate()
        defer { gate.open() }
        let returned = Atomic(false)
        let call = Task {
            try await storage.fetch(Note.self, id: "n", policy: LoadPolicy(loadTimeout: .seconds(30))) { id in
                await gate.pass()  // deaf to cancellation until the gate opens
                returned.store(true, ordering: .sequentiallyConsistent)
                return Note(id: id, text: "late")
            }
        }
        try await gate.waitForLoad()
        let center = storage.core.liveQueries
        #expect(center.observerCount > 0, "the load watches its lease")
        clock.advance(by: .seconds(31))
        await #expect(throws: LocalStorageError.loadTimedOut(id: "n")) { try await call.value }
        let released = await eventually(within: .seconds(60)) { center.observerCount == 0 }
        #expect(released, "the given-up load still watches, \(center.observerCount) observers")
        #expect(storage.core.loads.count == 0)
        // The lease went back: the next caller loads at once.
        let next = try await storage.fetch(Note.self, id: "n", policy: LoadPolicy(loadTimeout: .seconds(30))) { id in
            Note(id: id, text: "next")
        }
        #expect(next?.text == "next")
        gate.open()
        try await eventually("the loader to return") { returned.load(ordering: .sequentiallyConsistent) }
        try await storage.save(Note(id: "other", text: "a commit after the loader returned"))
        #expect(try await storage.fetch(Note.self, id: "n")?.text == "next", "the late load stored nothing")
    }
}
