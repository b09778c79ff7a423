@_spi(Maintenance) import LocalStorageKit

/// `clear TYPE --yes`: deletes every record of a type.
enum ClearCommand: Command {
    static let name = "clear"
    static let synopsis = "clear TYPE --yes"
    static let summary = "Deletes every record of a type (asks for --yes)."
    static let details = """
          --yes   confirms; without it nothing is deleted

        \(TypeArgument.help)
        """
    static let spec = ArgumentSpec(flags: ["yes"], positionals: 1...1)

    static func validate(_ arguments: ParsedArguments) throws(UsageError) {
        guard arguments.has("yes") else {
            throw UsageError("clear deletes every record of \(arguments.positionals[0]); add --yes to confirm")
        }
    }

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let type = TypeArgument.name(arguments.positionals[0], in: store)
        let count = try await store.clear(type)
        try output.result(
            DeletionReport(type: type, id: nil, deleted: count),
            text: "Deleted \(count) records of \(TypeArgument.displayed(type)).")
        return 0
    }
}
