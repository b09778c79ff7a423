import Foundation
import Testing

@testable import LocalStorageKit

/// A store whose map reached `maxMapSize` can always be emptied.
@Suite struct FullMapTests {
    @Test func aFullMapCanBeEmptiedOneDeleteAtATime() async throws {
        var configuration = diskConfiguration()
        configuration.mapSize = 1 << 20
        configuration.maxMapSize = 4 << 20
        let storage = try LocalStorage(configuration: configuration)
        var saved: [String] = []
        let text = String(repeating: "x", count: 900)
        filling: while saved.count < 100_000 {
            let batch = (saved.count..<saved.count + 50).map { Note(id: "n\($0)", text: text) }
            do {
                try await storage.save(contentsOf: batch)
                saved += batch.map(\.id)
            } catch LocalStorageError.storageFull {
                break filling
            }
        }
        // Then one record at a time, to the last page.
        single: while true {
            let note = Note(id: "s\(saved.count)", text: text)
            do {
                try await storage.save(note)
                saved.append(note.id)
            } catch LocalStorageError.storageFull {
                break single
            }
        }
        #expect(saved.count > 100)
        for id in saved {
            try await storage.delete(Note.self, id: id)
        }
        #expect(try await storage.count(Note.self) == 0)
        #expect(!LocalStorageError.storageFull.description.contains("the log says which"))
    }
}
