import Foundation
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The open's page check reads the free-page lists (issue 21): a page listed twice, or listed as free while a
/// database uses it, would make LMDB hand the same page to two trees on the next write. Since issue 25 the
/// check marks pages in an array instead of a set (it ran at every open and grew with the free list); these
/// tests damage one list on disk and expect the open to refuse the file.
@Suite struct FreeListCheckTests {
    /// A store whose free-page database holds lists: 400 records of 1,200 bytes, 300 of them deleted one by one.
    private func storeWithFreePages() async throws -> URL {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        let text = String(repeating: "f", count: 1_200)
        try await storage.save(contentsOf: (0..<400).map { Note(id: "n\($0)", text: text) })
        for n in 100..<400 { try await storage.delete(Note.self, id: "n\(n)") }
        return directory
    }

    /// Rewrites the second page number of a free-page list of the newest commit with `replacement(first,
    /// main)`, where `first` is the list's first page and `main` the main database's root.
    private func damageFreeList(_ directory: URL, replacement: (UInt64, UInt64) -> UInt64) throws {
        let path = storeFilesDirectory(directory).appendingPathComponent("data.mdb").path
        let meta = try walkDataFile(path).meta
        let descriptor = open(path, O_RDWR)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        try #require(meta.freePages.depth == 1, "the test needs a free-page database of one leaf")
        let pageOffset = off_t(meta.freePages.root) * off_t(meta.pageSize)
        var page = [UInt8](repeating: 0, count: meta.pageSize)
        let read = page.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, pageOffset) }
        try #require(read == meta.pageSize)
        func integer<I: FixedWidthInteger>(_ offset: Int, _ type: I.Type) -> I {
            page.withUnsafeBytes { I(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: I.self)) }
        }
        try #require(integer(10, UInt16.self) & DataFilePages.leaf != 0)
        let nodes = (Int(integer(12, UInt16.self)) - DataFilePages.headerSize) / 2
        var patched = false
        for index in 0..<nodes where !patched {
            let node = Int(integer(DataFilePages.headerSize + 2 * index, UInt16.self))
            let flags = integer(node + 4, UInt16.self)
            let keySize = Int(integer(node + 6, UInt16.self))
            let list = node + DataFilePages.nodeSize + keySize
            guard flags & DataFilePages.bigData == 0, integer(list, UInt64.self) >= 2 else { continue }
            let value = replacement(integer(list + 8, UInt64.self), meta.main.root).littleEndian
            withUnsafeBytes(of: value) { page.replaceSubrange((list + 16)..<(list + 24), with: $0) }
            patched = true
        }
        try #require(patched, "no free-page list of two pages in the leaf")
        let written = page.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, pageOffset) }
        try #require(written == meta.pageSize)
    }

    @Test func aPageListedAsFreeTwiceFailsTheOpen() async throws {
        let directory = try await storeWithFreePages()
        try damageFreeList(directory) { first, _ in first }
        expectOpenFailed(directory, mentioning: ["listed as free twice"])
    }

    @Test func aFreePageADatabaseUsesFailsTheOpen() async throws {
        let directory = try await storeWithFreePages()
        try damageFreeList(directory) { _, mainRoot in mainRoot }
        expectOpenFailed(directory, mentioning: ["listed as free but a database uses it"])
    }

    @Test func anUndamagedStoreWithFreePagesOpens() async throws {
        let directory = try await storeWithFreePages()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        #expect(try await storage.count(Note.self) == 100)
    }
}
