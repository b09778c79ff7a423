@_spi(Maintenance) import LocalStorageKit

/// `purge-expired [TYPE]`: deletes expired records.
enum PurgeExpiredCommand: Command {
    static let name = "purge-expired"
    static let synopsis = "purge-expired [TYPE]"
    static let summary = "Deletes the expired records of one type, or of every type."
    static let details = ""
    static let spec = ArgumentSpec(positionals: 0...1)

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let progress = ProgressDisplay()
        let purged = try await store.purgeExpired(
            arguments.positionals.first.map { TypeArgument.name($0, in: store) }, progress: progress.handler)
        progress.finish()
        let total = purged.values.reduce(0, +)
        let counts = purged.sorted { $0.key < $1.key }.map { "\(TypeArgument.displayed($0.key)): \($0.value)" }
        let detail = counts.isEmpty ? "" : " (" + counts.joined(separator: ", ") + ")"
        try output.result(purged, text: "Purged \(total) expired records\(detail).")
        return 0
    }
}
