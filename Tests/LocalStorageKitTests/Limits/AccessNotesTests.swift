import Synchronization
import Testing

@testable import LocalStorageKit

/// The reads noted for eviction between commits (review-94 #3): a commit is asked for once the threshold is
/// reached, again after one that failed or took them, and notes a commit took but did not commit come back.
@Suite struct AccessNotesTests {
    /// Notes `count` reads of keys `from`, `from + 1`, … of type 1.
    func note(_ notes: AccessNotes, _ count: Int, from first: Int = 0) {
        for n in first..<(first + count) {
            let key = Array("k\(n)".utf8)
            key.withUnsafeBytes { notes.note(type: 1, key: $0) }
        }
    }

    @Test func aCommitIsAskedForOnceUntilOneTakesTheNotes() {
        let notes = AccessNotes()
        let asked = Mutex(0)
        notes.whenFull { asked.withLock { $0 += 1 } }
        note(notes, AccessNotes.foldThreshold - 1)
        #expect(asked.withLock { $0 } == 0)
        note(notes, 1, from: AccessNotes.foldThreshold - 1)
        #expect(asked.withLock { $0 } == 1)
        note(notes, 100, from: AccessNotes.foldThreshold)  // The commit has not run yet.
        #expect(asked.withLock { $0 } == 1)
        #expect(notes.take().count == AccessNotes.foldThreshold + 100)
        note(notes, AccessNotes.foldThreshold)
        #expect(asked.withLock { $0 } == 2)
    }

    /// Past the threshold, a commit that failed before taking the notes is asked for again at the next read
    /// (the notes never equalled the threshold again, so a process that only reads stopped asking).
    @Test func aFailedFoldIsAskedForAgain() {
        let notes = AccessNotes()
        let asked = Mutex(0)
        notes.whenFull { asked.withLock { $0 += 1 } }
        note(notes, AccessNotes.foldThreshold + 10)
        #expect(asked.withLock { $0 } == 1)
        notes.foldFailed()
        #expect(asked.withLock { $0 } == 1)
        note(notes, 1, from: AccessNotes.foldThreshold + 10)
        #expect(asked.withLock { $0 } == 2)
    }

    /// Notes given back by a transaction that did not commit come before those noted since, the newest kept
    /// within the capacity, and ask for a commit again.
    @Test func notesGivenBackComeFirstWithinTheCapacity() {
        let notes = AccessNotes()
        let asked = Mutex(0)
        notes.whenFull { asked.withLock { $0 += 1 } }
        note(notes, 5)
        let taken = notes.take()
        note(notes, 3, from: 5)
        notes.giveBack(taken)
        #expect(notes.take().map { String(decoding: $0.key, as: UTF8.self) } == (0..<8).map { "k\($0)" })

        note(notes, AccessNotes.capacity - 2, from: 100)
        #expect(asked.withLock { $0 } == 1)
        notes.giveBack(taken)  // Room for two of the five: the newest.
        let all = notes.take().map { String(decoding: $0.key, as: UTF8.self) }
        #expect(all.count == AccessNotes.capacity)
        #expect(Array(all.prefix(3)) == ["k3", "k4", "k100"])
        notes.giveBack(taken)
        note(notes, AccessNotes.foldThreshold, from: 200_000)
        #expect(asked.withLock { $0 } == 2)
    }
}
