import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// An in-memory store leaves nothing behind in `/dev/shm` (or the temporary directory), however its
/// process ends.
@Suite struct InMemoryStoreTests {
    @Test(arguments: ["hold", "exit"])
    func nothingOutlivesTheProcess(ending: String) async throws {
        let helper = try HelperProcess(["in-memory", ending])
        try await helper.waitForLine("the helper to open its store") { $0 == "ready" }
        let directories = helper.lines.filter { $0.hasPrefix("dir ") }.map { String($0.dropFirst(4)) }
        #expect(directories.count == 1, "the helper reported \(directories)")
        if ending == "hold" {
            await helper.kill()
        } else {
            #expect(await helper.waitForExit() == 0)
        }
        for directory in directories {
            #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is left behind")
        }
    }

    @Test func anInMemoryStoreWorksOnceItsFilesAreUnlinked() async throws {
        var configuration = LocalStorageConfiguration.inMemory
        configuration.mapSize = 256 << 10  // so that the map has to grow on its unlinked file
        configuration.growsMapFromMapSize = true
        let storage = try LocalStorage(configuration: configuration)
        #expect(!FileManager.default.fileExists(atPath: storage.core.directory.path))
        let notes = (0..<2_000).map { Note(id: "n\($0)", text: String(repeating: "t", count: 500)) }
        try await storage.save(contentsOf: notes)
        #expect(try await storage.count(Note.self) == 2_000)
        #expect(try await storage.fetch(Note.self, id: "n1999") == notes[1999])
        let other = try LocalStorage(configuration: .inMemory)
        #expect(try await other.count(Note.self) == 0)
    }
}
