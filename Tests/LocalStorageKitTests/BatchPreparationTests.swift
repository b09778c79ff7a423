import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

/// A value that counts its live instances: a record holding one is released once every copy of the record is.
private final class Tally: Codable, Sendable {
    static let live = Atomic<Int>(0)

    init() { Self.live.add(1, ordering: .relaxed) }

    required init(from decoder: any Decoder) throws {
        _ = try decoder.singleValueContainer().decode(Int.self)
        Self.live.add(1, ordering: .relaxed)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(1)
    }

    deinit { Self.live.subtract(1, ordering: .relaxed) }
}

private struct TalliedNote: LocalStorable {
    let id: String
    let tally: Tally
}

/// `prepareAll` encodes a large batch in chunks into one buffer that child tasks fill and the result takes over by
/// moving the records: none may be leaked or released twice, whether the batch is saved or fails part way.
@Suite struct BatchPreparationTests {
    @Test func aBatchEncodedInChunksReleasesEveryRecordSavedOrFailed() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let count = LocalStorage.preparationChunk * 4 + 17
        do {
            let notes = (0..<count).map { TalliedNote(id: "n\($0)", tally: Tally()) }
            try await storage.save(contentsOf: notes)
        }
        #expect(Tally.live.load(ordering: .relaxed) == 0)
        #expect(try await storage.count(TalliedNote.self) == count)

        // A record fails at the start, in the middle (the chunks' border lies near it whatever their number) and at
        // the end: the tasks before it encoded their whole chunks, its own task stopped there, and the tasks after
        // it may have encoded any part of theirs. (On one processor one task encodes the batch: nothing to check.)
        for failing in [0, count / 2 + 3, count - 1] {
            do {
                var notes = (0..<count).map { TalliedNote(id: "m\($0)", tally: Tally()) }
                notes[failing] = TalliedNote(id: "", tally: Tally())
                await #expect(throws: LocalStorageError.self) { try await storage.save(contentsOf: notes) }
            }
            #expect(Tally.live.load(ordering: .relaxed) == 0, "failing at \(failing)")
        }
        #expect(try await storage.count(TalliedNote.self) == count)
    }
}
