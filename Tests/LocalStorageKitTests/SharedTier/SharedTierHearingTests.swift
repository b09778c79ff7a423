import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// When a hearing from the server counts (``SharedTier/State/heard(at:)``, ``SharedTier/State/noteLocalCommit(through:)``):
/// once the changes received before it are committed locally, whatever was received after it. Counted
/// against every change received so far, a steady stream of notices never let a hearing count, and every read
/// waited (/work/review-76.md #1).
struct SharedTierHearingTests {
    /// Random streams of notices, hearings and local commits (each committing a prefix of what was received),
    /// against a model that remembers every hearing with the last change received before it: `lastHeard` is
    /// never later than the model's (a hearing never vouches for changes not committed), and equal to it while
    /// no more hearings wait than the state keeps apart.
    @Test(arguments: 0..<20)
    func aHearingCountsOnceTheChangesReceivedBeforeItAreCommitted(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        var state = SharedTier.State()
        state.phase = .live
        var received: Int64 = 0
        var committed: Int64 = 0
        state.receivedSeq = received
        state.noteLocalCommit(through: committed)
        var modelHearings: [(at: Duration, through: Int64)] = []
        var modelLastHeard: Duration?
        var merged = false
        for step in 1...400 {
            let now = Duration.milliseconds(step)
            switch generator.next() % 3 {
            case 0:
                received += 1
                state.receivedSeq = received
            case 1:
                if state.pendingHearings.count == SharedTier.State.pendingHearingsLimit { merged = true }
                state.heard(at: now)
                if received <= committed {
                    modelLastHeard = max(modelLastHeard ?? now, now)
                } else {
                    modelHearings.append((now, received))
                }
            default:
                committed += Int64(generator.next() % UInt64(received - committed + 1))
                state.noteLocalCommit(through: committed)
                for hearing in modelHearings where hearing.through <= committed {
                    modelLastHeard = max(modelLastHeard ?? hearing.at, hearing.at)
                }
                modelHearings.removeAll { $0.through <= committed }
            }
            if let heard = state.lastHeard {
                #expect(heard <= modelLastHeard ?? .zero, "step \(step)")
            }
            if !merged {
                #expect(state.lastHeard == modelLastHeard, "step \(step)")
            }
        }
        #expect(modelLastHeard != nil)
    }

    /// The case the rule was about: a notice keeps arriving while the previous one is committed.
    @Test func aHearingCountsWhileLaterNoticesWaitForTheWriter() {
        var state = SharedTier.State()
        state.phase = .live
        state.receivedSeq = 1
        state.heard(at: .seconds(10))  // With change 1 received, not committed.
        state.receivedSeq = 2  // The next notice arrives before the writer commits change 1.
        state.noteLocalCommit(through: 1)
        #expect(state.lastHeard == .seconds(10))
        state.heard(at: .seconds(11))
        state.receivedSeq = 3
        state.noteLocalCommit(through: 2)
        #expect(state.lastHeard == .seconds(11))
    }
}
