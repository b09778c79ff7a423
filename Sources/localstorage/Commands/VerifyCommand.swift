@_spi(Maintenance) import LocalStorageKit

/// `verify [--repair]`: checks records against their index entries; exit status 1 when problems are found.
enum VerifyCommand: Command {
    static let name = "verify"
    static let synopsis = "verify [--repair]"
    static let summary = "Checks every record and index entry; exit status 1 if there are problems."
    static let details = """
        Checks that every record's header parses and its payload reads as JSON; that every index,
        update-time and expiry entry points at an existing record holding that value; and that every
        record's values are in its indexes. Prints each problem with its type and id.
          --repair   first rebuilds the index entries of inconsistent types from the values stored in
                     the record headers, then checks again (damaged records stay; delete them)
        """
    static let spec = ArgumentSpec(flags: ["repair"])

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let progress = ProgressDisplay()
        let report =
            arguments.has("repair")
            ? try await store.repair(progress: progress.handler)
            : try store.verify(progress: progress.handler)
        progress.finish()
        show(report, output: output)
        return report.isClean ? 0 : 1
    }

    /// Prints a verify report: the problems, then a summary line (or the report as JSON).
    static func show(_ report: VerifyReport, output: Output) {
        if output.isJSON {
            do {
                try output.json(report)
            } catch {
                output.message("localstorage: error: \(error)")
            }
            return
        }
        for name in report.repairedTypes {
            output.line("Rebuilt the index entries of \(name).")
        }
        for problem in report.problems {
            output.line("\(problem)")
        }
        let found = report.problems.count
        output.line(
            "Checked \(report.types) types, \(report.records) records, \(report.entries) entries: "
                + (found == 0 ? "no problems." : "\(found) problem\(found == 1 ? "" : "s")."))
    }
}
