import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `get TYPE ID`: a record's payload as pretty JSON, whatever the codec; with `--json`, metadata and payload.
enum GetCommand: Command {
    static let name = "get"
    static let synopsis = "get TYPE ID [--escaped]"
    static let summary = "A record's payload as pretty JSON (whatever the codec); --json adds its metadata."
    static let details = """
        Standard output holds the payload JSON and nothing else, so it pipes into jq (a record that has
        expired but is not purged yet is shown too, with a note on standard error). With --json it
        holds one object: the record's metadata (type, id, createdAt, updatedAt, expiresAt in ns since
        1970, version, format, signature, indexes) and "payload". NaN and ±Infinity, which JSON cannot
        hold, show as the strings "NaN", "Infinity" and "-Infinity".

        \(IdentifierArgument.help)
        \(TypeArgument.help)
        """
    static let spec = ArgumentSpec(flags: ["escaped"], positionals: 2...2)
    static let onlyReads = true

    static func validate(_ arguments: ParsedArguments) throws(UsageError) {
        _ = try IdentifierArgument.id(arguments)
    }

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let detail = try store.record(
            TypeArgument.name(arguments.positionals[0], in: store), id: try IdentifierArgument.id(arguments))
        output.line(
            JSONText.prettyPrinted(
                output.isJSON
                    ? try detail.jsonLine(includingExactPayload: false)
                    : detail.payload))
        if detail.summary.isExpired == true, !output.isJSON {
            // The app no longer sees it (an expired record is invisible to every read): say so, off the JSON.
            output.message(
                "localstorage: note: \(TypeArgument.displayed(detail.summary.type)) "
                    + "\(IdentifierArgument.displayed(detail.summary.id)) has expired (the app no longer reads it; "
                    + "purge-expired removes it)")
        }
        return 0
    }
}
