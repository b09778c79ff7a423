import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `import FILE`: reads a file written by `export` into the store.
enum ImportCommand: Command {
    static let name = "import"
    static let synopsis = "import FILE|- [--no-payload-check]"
    static let summary = "Imports a JSON Lines file written by export into the store (created if missing)."
    static let details = """
        FILE is a file, or - (or /dev/stdin, or any pipe) for standard input, which is read once (a file
        named - is ./-).
        All or nothing: every line is checked before anything is written, then every record is written
        in one transaction, replacing records with the same type and id and keeping their timestamps,
        expiry, version and index values. When the import fails nothing of it remains (a store it
        created is removed again). Types the store does not know are added as the file describes them.
        Each record is checked against its type: its payload must be a JSON object whose "id", when it
        has one, equals the record's id, its index
        values must be declared with their kinds and agree with payload members of the same name (and
        none its payload holds may be left out), its times must be after 1970, its version at least 1,
        and no record may appear twice in the file. Records exported with a
        "binaryPayload" are restored exactly from it. An import that would
        write fewer records than it read fails (status 1) and writes nothing. With --key-file the records are sealed with that
        key (a new store is created encrypted).
          --no-payload-check   do not compare index values with payload members of the same name
                               (for indexes computed differently, such as a lowercased email)
        """
    static let spec = ArgumentSpec(flags: ["no-payload-check"], positionals: 1...1)
    static let createsStore = true

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let progress = ProgressDisplay()
        // `-` is standard input, even beside a file of that name (which is `./-`).
        let argument = arguments.positionals[0]
        let file = URL(fileURLWithPath: argument == "-" ? "/dev/stdin" : argument)
        let report = try await store.importRecords(
            from: file,
            checkingPayloadValues: !arguments.has("no-payload-check"),
            progress: progress.handler)
        progress.finish()
        let types =
            report.types.isEmpty ? "" : " of " + report.types.map(TypeArgument.displayed).joined(separator: ", ")
        try output.result(report, text: "Imported \(report.records) records\(types).")
        return 0
    }
}
