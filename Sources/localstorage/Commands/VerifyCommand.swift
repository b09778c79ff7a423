import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `verify [--repair]`: checks the file's pages, then records against their index entries, in a child
/// process; exit status 1 when problems are found.
enum VerifyCommand: Command {
    static let name = "verify"
    static let synopsis = "verify [--repair]"
    static let summary = "Checks every page, record and index entry; exit status 1 if there are problems."
    static let details = """
        First walks every database and page reference of the data file with plain reads, then checks
        that every record's header parses and its payload reads as JSON; that every index, update-time
        and expiry entry points at an existing record holding that value; and that every record's
        values are in its indexes. Prints each problem with its type and id. The check runs in a child
        process: even a crash inside LMDB on a damaged file becomes a report of where it happened.
          --repair   on a file whose pages are damaged: copies every record that can be read into a
                     fresh store and puts it in the old one's place (no process may have the store
                     open). Otherwise removes records whose bytes cannot be read, rebuilds the index
                     entries and counts of inconsistent types, then checks again. A record whose sealed
                     payload opens with none of the keys given is reported, never removed, and no
                     salvage runs over it: during a key rotation, pass the old key too (--key-file NEW
                     --previous-key-file OLD).
        The store is a cache: when even a repair cannot make it clean, remove it (the app can call
        LocalStorage.removeStore(at:)) and let it fill again.
        """
    static let spec = ArgumentSpec(flags: ["repair"])
    /// Names the file the child process writes its current stage to (set only in the child).
    static let stageVariable = "LOCALSTORAGE_VERIFY_STAGE"
    /// For the tests: a signal number the child raises on itself when it reaches a stage, standing in for a
    /// crash inside LMDB on a damaged file (which a test cannot produce at will).
    static let raiseVariable = "LOCALSTORAGE_VERIFY_TEST_RAISE"

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        // Not reached: LocalStorageTool calls run(_:directory:output:) without opening the store.
        try await check(arguments, directory: store.directory, output: output)
    }

    /// Runs the check in a child process (this executable again), unless this is that child.
    static func run(_ arguments: ParsedArguments, directory: URL, output: Output) async throws -> Int32 {
        if let stageFile = ProcessInfo.processInfo.environment[stageVariable] {
            return try await check(arguments, directory: directory, output: output, stageFile: stageFile)
        }
        return try ChildCheck.run(stageVariable: stageVariable, output: output)
    }

    /// The check itself (in the child).
    static func check(
        _ arguments: ParsedArguments, directory: URL, output: Output, stageFile: String? = nil
    ) async throws -> Int32 {
        let raising = ProcessInfo.processInfo.environment[raiseVariable].flatMap { Int32($0) }
        func stage(_ text: String) {
            ChildCheck.write(stage: text, to: stageFile)
            if let raising, stageFile != nil { raise(raising) }
        }
        let progress = ProgressDisplay()
        let encryption = try KeyFile.encryption(arguments)
        if arguments.has("repair") {
            stage("the walk of its pages")
            let damage = try StoreMaintenance.pageDamage(directory: directory)
            if !damage.isEmpty {
                return try await salvageAndCheck(
                    after: nil, directory: directory, encryption: encryption, progress: progress, output: output,
                    stage: stage)
            }
            stage("the repair of its records and index entries")
            let (report, newerTypes) = try await repairInPlace(
                directory: directory, encryption: encryption, progress: progress)
            progress.finish()
            // A record sealed with a key this command was not given, or written by a newer version, is not
            // damaged: a salvage would lose it. So would it every record of a type whose description a newer
            // version wrote (well-formed, with an index kind this version does not know): while one is there,
            // nothing is salvaged.
            guard !report.isClean,
                report.problems.contains(where: { ![.sealNotOpened, .newerRecord].contains($0.kind) }),
                newerTypes.isEmpty
            else {
                show(report, output: output)
                return report.isClean ? 0 : 1
            }
            // What rebuilding cannot fix (an unreadable type description …): salvage what can be read.
            return try await salvageAndCheck(
                after: report, directory: directory, encryption: encryption, progress: progress, output: output,
                stage: stage)
        }
        stage("opening the store")
        let store = try await StoreMaintenance(
            directory: directory, encryption: encryption, movesKeyCheck: false, upgradesLayout: false)
        stage("the check of its pages, records and index entries")
        let report = try store.verify(progress: progress.handler)
        progress.finish()
        show(report, output: output)
        return report.isClean ? 0 : 1
    }

    /// `StoreMaintenance.repair` on a store whose pages are sound; the store is closed again on return.
    private static func repairInPlace(
        directory: URL, encryption: StorageEncryption?, progress: ProgressDisplay
    ) async throws -> (report: VerifyReport, newerTypes: [String]) {
        let store = try await StoreMaintenance(directory: directory, encryption: encryption, movesKeyCheck: false)
        return (try await store.repair(progress: progress.handler), store.newerTypeNames)
    }

    /// Writes `value` as JSON, or the reason it cannot be.
    private static func writeJSON<T: Encodable>(_ value: T, output: Output) {
        do {
            try output.json(value)
        } catch {
            output.message("localstorage: error: \(error)")
        }
    }

    /// What a repair that salvaged reports: the repair's report when one ran first, the salvage's, and the
    /// check of the salvaged store; one JSON document with `--json` (with what was done when a step failed).
    struct Salvaged: Encodable {
        var repair: VerifyReport?
        var salvage: SalvageReport?
        var verify: VerifyReport?
    }

    /// Salvages the store (after `repair`'s report, when a repair ran first) and checks the result. Each report
    /// is printed as soon as it is known, or, with `--json`, all of them in one document, also when a later
    /// step fails: the salvage's report is the only list of the records it lost.
    private static func salvageAndCheck(
        after repair: VerifyReport?, directory: URL, encryption: StorageEncryption?, progress: ProgressDisplay,
        output: Output, stage: (String) -> Void
    ) async throws -> Int32 {
        var salvaged = Salvaged(repair: repair)
        if let repair, !output.isJSON { show(repair, output: output) }
        do {
            stage("the salvage of its records")
            let salvage = try await StoreMaintenance.salvage(directory: directory, encryption: encryption)
            salvaged.salvage = salvage
            if salvage.keyUnused {
                output.message("localstorage: note: the store is not encrypted; the key file was not used")
            }
            if !output.isJSON { show(salvage, output: output) }
            stage("the check of the salvaged store")
            let report = try await StoreMaintenance(
                directory: directory, encryption: salvage.keyUnused ? nil : encryption, movesKeyCheck: false
            ).verify(
                progress: progress.handler)
            progress.finish()
            salvaged.verify = report
            if output.isJSON { writeJSON(salvaged, output: output) } else { show(report, output: output) }
            return report.isClean ? 0 : 1
        } catch {
            if output.isJSON { writeJSON(salvaged, output: output) }
            throw error
        }
    }

    /// Prints what a salvage did.
    static func show(_ salvage: SalvageReport, output: Output) {
        for problem in salvage.damage { output.line(InvisibleCharacters.escaped("\(problem)", keeping: [])) }
        for problem in salvage.lost { output.line("lost " + InvisibleCharacters.escaped("\(problem)", keeping: [])) }
        // Of the records the damaged file counts, those the salvage did not write are lost (reached or not).
        let salvaged = salvage.counted.map { "\(salvage.salvaged) of the \($0) records the damaged file counts" }
        let missing = salvage.counted.map { max(0, $0 - salvage.salvaged) } ?? 0
        let unread = salvage.lost.isEmpty ? "" : "; \(salvage.lost.count) could not be read"
        let lost = missing > 0 ? "; \(missing) \(missing == 1 ? "is" : "are") lost" : unread
        output.line(
            "Salvaged \(salvaged ?? "\(salvage.salvaged) records") into a fresh store, which replaced the damaged "
                + "one\(lost).")
        if salvage.counted == nil {
            output.line("How many records the damaged file held cannot be told: its main database cannot be read.")
        }
        if let kept = salvage.keptDamagedFile {
            output.line(
                "The damaged file is kept as \(InvisibleCharacters.escaped(kept, keeping: [])); remove it once "
                    + "nothing more is to be read from it.")
        }
    }

    /// Prints a verify report: the problems, then a summary line (or the report as JSON).
    static func show(_ report: VerifyReport, output: Output) {
        if output.isJSON { return writeJSON(report, output: output) }
        for problem in report.removedRecords {
            output.line(
                "Removed \(TypeArgument.displayed(problem.type)) \(problem.id.map(IdentifierArgument.displayed) ?? "?"): "
                    + "it could not be read (\(InvisibleCharacters.escaped(problem.detail, keeping: [])))."
            )
        }
        for name in report.repairedTypes {
            output.line("Rebuilt the index entries of \(TypeArgument.displayed(name)).")
        }
        for problem in report.problems {
            // One line per problem: a line break in an id is escaped like any other control character.
            output.line(InvisibleCharacters.escaped("\(problem)", keeping: []))
        }
        let found = report.problems.count
        let damagedFile = report.problems.contains(where: { $0.kind == .damagedFile })
        if damagedFile {
            // No record was read: LMDB cannot be trusted with a damaged file (trial88 #5: "0 records" read as if
            // the store held none).
            output.line(
                "Checked the pages of \(report.types) types' databases: \(found) problem\(found == 1 ? "" : "s"); "
                    + "no record was read.")
            output.line("The file is damaged: `localstorage verify --repair` salvages what can be read.")
        } else {
            output.line(
                "Checked \(report.types) types, \(report.records) records, \(report.entries) entries: "
                    + (found == 0 ? "no problems." : "\(found) problem\(found == 1 ? "" : "s")."))
        }
    }
}
