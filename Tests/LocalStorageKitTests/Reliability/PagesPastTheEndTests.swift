import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A meta page may name more pages than the data file holds: pages a commit allocated and freed before it
/// wrote them (LMDB's loose pages) are free but never written. Four processes opening a new store at once
/// met such a file, and the open's page check called it damaged. Free pages past the end are fine; a page
/// a tree uses past the end is not.
@Suite struct PagesPastTheEndTests {
    /// The newest meta page's last page and the free pages of the store's data file at `path`.
    private func layout(_ path: String) throws -> (lastPage: UInt64, free: Set<UInt64>, pageSize: Int) {
        let (walk, meta) = try walkDataFile(path)
        #expect(walk.problems.isEmpty, "\(walk.problems)")
        return (meta.lastPage, Set(walk.freeListed), meta.pageSize)
    }

    @Test func freePagesPastTheEndOfTheFileOpenAndAUsedOneDoesNot() async throws {
        let directory = temporaryDirectory()
        var model: [String: Note] = [:]
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            let text = String(repeating: "p", count: 1_200)
            // Ids in the order they sort: the deleted records are the last ones written, at the end of the file.
            let notes = (0..<400).map { Note(id: "n\(1_000 + $0)", text: text) }
            try await storage.save(contentsOf: notes)
            for note in notes { model[note.id] = note }
            // The newest records go, in several commits: the pages at the end of the file become free.
            for n in stride(from: 399, through: 100, by: -1) {
                try await storage.delete(Note.self, id: "n\(1_000 + n)")
                model["n\(1_000 + n)"] = nil
            }
        }
        let path = storeFilesDirectory(directory).appendingPathComponent("data.mdb").path
        let (lastPage, free, pageSize) = try layout(path)
        var firstCut = lastPage &+ 1
        while firstCut > 2, free.contains(firstCut - 1) { firstCut -= 1 }
        try #require(firstCut <= lastPage, "the store's last page should be free; the test needs another layout")

        // The free pages past `firstCut` are cut from the file, as if they were never written.
        #expect(truncate(path, off_t(firstCut) * off_t(pageSize)) == 0)
        do {
            let storage = try LocalStorage(configuration: diskConfiguration(directory))
            let stored = try await storage.fetch(Note.self)
            #expect(stored == model.values.sorted { $0.id < $1.id })
            let report = try await StoreMaintenance(directory: storage.core.directory).verify()
            #expect(report.isClean, "\(report.problems)")
        }

        // One page more: a page the trees or the free list need lies past the end now.
        let (_, freeNow, _) = try layout(path)
        var cut = firstCut
        while cut > 2, freeNow.contains(cut - 1) { cut -= 1 }
        #expect(truncate(path, off_t(cut - 1) * off_t(pageSize)) == 0)
        expectOpenFailed(directory, mentioning: ["damaged", "outside", "past its end"])
    }
}
