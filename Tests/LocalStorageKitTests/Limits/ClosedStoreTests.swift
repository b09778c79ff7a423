import Foundation
import Testing

@testable import LocalStorageKit

/// Conditions that are not LMDB's get their own error cases, never `storageError(code: -1, …)`.
@Suite struct ClosedStoreTests {
    @Test func aWriteAfterTheWriterStoppedThrowsClosed() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Note(id: "a", text: "x"))
        storage.core.writer.stop()
        await #expect(throws: LocalStorageError.closed) { try await storage.save(Note(id: "b", text: "y")) }
        await #expect(throws: LocalStorageError.closed) { try await storage.delete(Note.self, id: "a") }
        #expect(LocalStorageError.closed.description.contains("open it again"))
    }

    @Test func codableFailuresAreNamedForWhatTheyAre() {
        let decoding = DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "bad"))
        let encoding = EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "bad"))
        guard case .decodingFailed = LocalStorageError.wrapping(decoding) else {
            Issue.record("a DecodingError is decodingFailed")
            return
        }
        guard case .encodingFailed = LocalStorageError.wrapping(encoding) else {
            Issue.record("an EncodingError is encodingFailed")
            return
        }
    }
}
