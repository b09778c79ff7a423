import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `export [TYPE…] [--output FILE]`: types and records as JSON Lines.
enum ExportCommand: Command {
    static let name = "export"
    static let synopsis = "export [TYPE…] [--output FILE]"
    static let summary = "Writes types and records as JSON Lines (to standard output by default)."
    static let details = """
        Arguments:
          TYPE…          the types to export (default: all)
          --output FILE  write to FILE instead of standard output
        Each type starts with a line describing it (type, version, signature, indexes), then one line
        per record: type, id, createdAt, updatedAt, expiresAt (ns since 1970), version, format,
        signature, indexes and payload (JSON). A payload holding NaN or ±Infinity shows them as the
        strings "NaN", "Infinity" and "-Infinity", and the line also carries binaryPayload (the stored
        bytes in Base64), from which import restores the record exactly. Each type is exported once,
        however often it is named. Unreadable records are left out and reported on standard error,
        and the exit status is 1.
        The export holds PLAINTEXT JSON, also from an encrypted store (opened with --key-file): keep it
        as safe as the key. An import into an encrypted store seals every record it writes.
        """
    static let spec = ArgumentSpec(options: ["output"], positionals: 0...Int.max)

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let toFile = arguments.value("output")
        let handle: FileHandle
        if let toFile {
            guard FileManager.default.createFile(atPath: toFile, contents: nil),
                let file = FileHandle(forWritingAtPath: toFile)
            else {
                throw MaintenanceError.invalidArgument("cannot write \(toFile)")
            }
            handle = file
        } else {
            handle = FileHandle.standardOutput
        }
        let progress = ProgressDisplay()
        let report = try store.export(
            types: arguments.positionals.map { TypeArgument.name($0, in: store) },
            to: { try handle.write(contentsOf: escapingInvisibleCharacters($0)) },
            progress: progress.handler)
        progress.finish()
        if toFile != nil { try handle.close() }
        // The records may be on standard output: the report then goes to standard error.
        if output.isJSON {
            try output.json(report, toStandardError: toFile == nil)
        } else {
            for problem in report.skipped {
                output.message("localstorage: skipped \(problem)")
            }
            let summary =
                "Exported \(report.records) records of \(report.types) types"
                + (report.skipped.isEmpty ? "." : "; skipped \(report.skipped.count) unreadable records.")
            if toFile == nil { output.message(summary) } else { output.line(summary) }
        }
        return report.skipped.isEmpty ? 0 : 1
    }

    /// A chunk of the export (whole JSON lines) with each invisible character written as a JSON escape
    /// (``InvisibleCharacters``), as every other command writes them: the same JSON to a parser (an import
    /// restores the same text), but nothing that can spoof a terminal or a review. Such a character can only
    /// stand inside a JSON string, except the whitespace JSON allows between tokens (tab, line feed, carriage
    /// return), which a stored JSON payload may hold there and which is kept as it is.
    static func escapingInvisibleCharacters(_ chunk: Data) -> Data {
        guard let text = String(validating: chunk, as: UTF8.self), InvisibleCharacters.occur(in: text) else {
            return chunk
        }
        return Data(InvisibleCharacters.escaped(text, keeping: ["\n", "\t", "\r"]).utf8)
    }
}
