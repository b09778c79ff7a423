@_spi(Maintenance) import LocalStorageKit

/// `delete TYPE ID`: deletes one record and its index entries.
enum DeleteCommand: Command {
    static let name = "delete"
    static let synopsis = "delete TYPE ID [--escaped]"
    static let summary = "Deletes one record and its index entries."
    static let details = """
        Fails (status 1) when the record does not exist.

        \(IdentifierArgument.help)
        \(TypeArgument.help)
        """
    static let spec = ArgumentSpec(flags: ["escaped"], positionals: 2...2)

    static func validate(_ arguments: ParsedArguments) throws(UsageError) {
        _ = try IdentifierArgument.id(arguments)
    }

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let (type, id) = (TypeArgument.name(arguments.positionals[0], in: store), try IdentifierArgument.id(arguments))
        try await store.delete(type, id: id)
        try output.result(
            DeletionReport(type: type, id: id, deleted: 1),
            text: "Deleted \(TypeArgument.displayed(type)) \(IdentifierArgument.quoted(id)).")
        return 0
    }
}

/// What `delete` and `clear` report with `--json`.
struct DeletionReport: Encodable {
    let type: String
    /// The id, for `delete`.
    let id: String?
    /// How many records were deleted.
    let deleted: Int
}
