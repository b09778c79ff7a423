import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `compact`: the store compacted in place, when no process has it open; `compact --output DIR`: a compacted
/// copy of the store, then `verify` on the copy.
enum CompactCommand: Command {
    static let name = "compact"
    static let synopsis = "compact [--output DIR]"
    static let summary =
        "Gives the store's free pages back to the disk: in place, or as a compacted copy in DIR; "
        + "reports the sizes before and after."
    static let details = """
        Without --output the data file is rewritten without its free pages, every tree packed full (the \
        room deletes left in pages still in use goes too), and swapped in atomically (the store keeps its \
        file mode); only while no process has the store open (exit 1 otherwise). A kill at \
        any moment leaves a store that opens with every committed record. Apps can have this done at open: \
        compaction: .onOpen(whenFreeFractionExceeds:); `stats` shows the free fraction. An encrypted store \
        is compacted only with its --key-file, as every command opens it (nothing is decrypted).
          --output DIR   write a compacted copy instead (created; must not hold a store yet), then verify
                         it; works while apps have the store open: the copy is the store of an app whose
                         databaseDirectory is DIR, in DIR/LocalStorage, and --store DIR names it
        """
    static let spec = ArgumentSpec(options: ["output"])

    static func validate(_ arguments: ParsedArguments) throws(UsageError) {
        if let output = arguments.value("output"), output.isEmpty { throw UsageError("--output needs a directory") }
    }

    /// Compacts the store in `directory` in place (no `--output`), before anything opens it.
    static func runInPlace(directory: URL, encryption: StorageEncryption?, output: Output) throws -> Int32 {
        let report = try StoreMaintenance.compactInPlace(directory: directory, encryption: encryption)
        if output.isJSON {
            try output.json(report)
        } else {
            output.line(
                "Compacted \(report.path) in place: \(Output.bytes(report.originalBytes))"
                    + " → \(Output.bytes(report.compactedBytes)) (free fraction was "
                    + "\(Int((report.freeFraction * 100).rounded()))%).")
        }
        return 0
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
