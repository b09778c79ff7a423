import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `import FILE`: reads a file written by `export` into the store.
enum ImportCommand: Command {
    static let name = "import"
    static let synopsis = "import FILE"
    static let summary = "Imports a JSON Lines file written by export into the store (created if missing)."
    static let details = """
        Every line is checked before anything is written; records are then written in bounded
        transactions, replacing records with the same type and id and keeping their timestamps,
        expiry, version and index values. Types the store does not know are added as the file
        describes them.
        """
    static let spec = ArgumentSpec(positionals: 1...1)
    static let createsStore = true

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let progress = ProgressDisplay()
        let file = URL(fileURLWithPath: arguments.positionals[0])
        let report = try await store.importRecords(from: file, progress: progress.handler)
        progress.finish()
        let types = report.types.isEmpty ? "" : " of " + report.types.joined(separator: ", ")
        try output.result(report, text: "Imported \(report.records) records\(types).")
        return 0
    }
}
