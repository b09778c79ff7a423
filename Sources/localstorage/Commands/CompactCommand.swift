import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `compact --output DIR`: a compacted copy of the store, then `verify` on the copy.
enum CompactCommand: Command {
    static let name = "compact"
    static let synopsis = "compact --output DIR"
    static let summary = "Writes a compacted copy of the store into DIR, then verifies the copy."
    static let details = """
          --output DIR   where the copy goes (created; must not hold a store yet): the copy is the
                         store of an app whose databaseDirectory is DIR, in DIR/LocalStorage, and
                         --store DIR names it
        """
    static let spec = ArgumentSpec(options: ["output"])

    static func validate(_ arguments: ParsedArguments) throws(UsageError) {
        guard arguments.value("output") != nil else { throw UsageError("compact needs --output DIR") }
    }

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let directory = URL(fileURLWithPath: arguments.value("output") ?? "", isDirectory: true)
        let progress = ProgressDisplay()
        let report = try await store.compact(to: directory, progress: progress.handler)
        progress.finish()
        if output.isJSON {
            try output.json(report)
        } else {
            output.line(
                "Wrote a compacted copy to \(report.output): \(Output.bytes(report.originalBytes))"
                    + " → \(Output.bytes(report.compactedBytes)).")
            VerifyCommand.show(report.verify, output: output)
        }
        return report.verify.isClean ? 0 : 1
    }
}
