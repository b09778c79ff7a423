import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `get TYPE ID`: a record's metadata and its payload as pretty JSON, whatever the codec.
enum GetCommand: Command {
    static let name = "get"
    static let synopsis = "get TYPE ID"
    static let summary = "A record's payload as pretty JSON (whatever the codec) and its metadata."
    static let details = ""
    static let spec = ArgumentSpec(positionals: 2...2)

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let detail = try store.record(arguments.positionals[0], id: arguments.positionals[1])
        if output.isJSON {
            output.line(JSONText.prettyPrinted(try detail.jsonLine()))
            return 0
        }
        let record = detail.summary
        output.line("type      \(record.type)")
        output.line("id        \(record.id)")
        output.line("created   \(Output.date(record.createdAt))")
        output.line("updated   \(Output.date(record.updatedAt))")
        output.line("expires   " + (record.expiresAt.map(Output.date) ?? "never")
            + (record.isExpired == true ? " (expired)" : ""))
        output.line("version   \(record.version)")
        output.line("format    \(record.format), \(Output.bytes(record.sizeInBytes ?? 0))")
        let indexes = record.indexes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        output.line("indexes   " + (indexes.isEmpty ? "none" : indexes.joined(separator: ", ")))
        output.line(JSONText.prettyPrinted(detail.payload))
        return 0
    }
}
