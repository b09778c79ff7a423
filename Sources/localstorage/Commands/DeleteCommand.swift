@_spi(Maintenance) import LocalStorageKit

/// `delete TYPE ID`: deletes one record and its index entries.
enum DeleteCommand: Command {
    static let name = "delete"
    static let synopsis = "delete TYPE ID"
    static let summary = "Deletes one record and its index entries."
    static let details = "Fails (status 1) when the record does not exist."
    static let spec = ArgumentSpec(positionals: 2...2)

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let (type, id) = (arguments.positionals[0], arguments.positionals[1])
        try await store.delete(type, id: id)
        try output.result(DeletionReport(type: type, id: id, deleted: 1), text: "Deleted \(type) \"\(id)\".")
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
