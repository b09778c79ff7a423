import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// What a load through the cache leaves behind when nobody waits for it any more: a flight given up at its timeout
/// whose loader ignores the cancellation, and a flight whose callers were all cancelled (review-105 F4).
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
        let call = Task {
            try await storage.fetch(Note.self, id: "n", policy: LoadPolicy(loadTimeout: .seconds(30))) { id in
                await gate.pass()  // deaf to cancellation until the gate opens
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
        #expect(try await storage.fetch(Note.self, id: "n")?.text == "next", "the late load stored nothing")
    }

    /// When every caller of a flight is cancelled, the flight is: it went on until its deadline (here ten minutes),
    /// holding the lease, and would run the loader for nobody.
    @Test func aLoadWhoseCallersAllLeftIsCancelled() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration(temporaryDirectory()))
        let gate = LoadGate()
        defer { gate.open() }
        let cancelled = Flag()
        let policy = LoadPolicy(loadTimeout: .seconds(600))
        let calls = (0..<3).map { _ in
            Task {
                try await storage.fetch(Note.self, id: "n", policy: policy) { id in
                    await withTaskCancellationHandler {
                        await gate.pass()
                    } onCancel: {
                        cancelled.raise()
                    }
                    return Note(id: id, text: "for nobody")
                }
            }
        }
        try await gate.waitForLoad()
        #expect(await eventually { storage.core.loads.waiterCount == 3 })
        calls[0].cancel()
        calls[1].cancel()
        for call in calls.prefix(2) { await #expect(throws: (any Error).self) { try await call.value } }
        let cancelledEarly = cancelled.isRaised
        #expect(!cancelledEarly, "one caller still waits")
        calls[2].cancel()
        await #expect(throws: (any Error).self) { try await calls[2].value }
        let stopped = await eventually(within: .seconds(60)) {
            cancelled.isRaised && storage.core.loads.count == 0
        }
        let loaderCancelled = cancelled.isRaised
        try #require(stopped, "the loader was \(loaderCancelled ? "" : "not ")cancelled")
        #expect(gate.loads == 1)
        // The lease went back with the cancelled load: the next caller loads at once.
        let next = try await storage.fetch(Note.self, id: "n", policy: policy) { id in Note(id: id, text: "next") }
        #expect(next?.text == "next")
    }
}

/// A flag any task may raise.
private final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)
    var isRaised: Bool { raised.load(ordering: .relaxed) }
    func raise() { raised.store(true, ordering: .relaxed) }
}
