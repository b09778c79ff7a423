import Foundation
import Testing

@testable import LocalStorageKit

/// What the CLI shows of a record whose payload was damaged on disk.
@Suite struct CLIDamagedPayloadTests {
    /// A JSON-codec record whose payload was damaged on disk is not printed or exported as if it were JSON:
    /// `get` fails naming it, `export` skips it and says so (exit 1), and every line it writes is JSON.
    @Test(arguments: [[0xFF, 0x00, 0x7B, 0x22, 0xC3], Array(#"{"text":"a"}{ [ "#.utf8), [0x22, 0xC3, 0x28, 0x22]])
    func aDamagedJSONPayloadIsNotPrintedAsJSON(payload: [UInt8]) async throws {
        var configuration = diskConfiguration()
        configuration.codec = .json
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(contentsOf: [Note(id: "good", text: "fine"), Note(id: "bad", text: "soon damaged")])
        let schema = try await storage.core.schema(for: Note.self)
        let damaged = try storage.core.environment.read { txn in
            guard let bytes = try txn.get(schema.records, key: Array("bad".utf8)) else { return [UInt8]() }
            return try RecordView(bytes).header(in: schema, txn: txn).serialized(payload: payload)
        }
        try await storage.core.writer.perform { context in
            try context.txn.put(schema.records, key: Array("bad".utf8), value: damaged)
        }
        let store = configuration.storeDirectory.path
        let get = try await CLIResult.run(["get", "Note", "bad", "--store", store], environment: nil)
        #expect(get.status != 0 && get.stdout.isEmpty, "\(get.stdout)")
        #expect(get.stderr.contains("\"bad\""), "\(get.stderr)")
        #expect(try await CLIResult.run(["get", "Note", "good", "--store", store], environment: nil).status == 0)
        let export = try await CLIResult.run(["export", "--store", store], environment: nil)
        #expect(export.status == 1 && export.stderr.contains("skipped"), "\(export.stderr)")
        let lines = export.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(export.stdout)")
        for line in lines {
            #expect(throws: Never.self) { try JSONSerialization.jsonObject(with: Data(line.utf8)) }
        }
    }
}
