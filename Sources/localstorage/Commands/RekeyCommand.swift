@_spi(Maintenance) import LocalStorageKit

/// `rekey --key-file OLD --new-key-file NEW`: reseals every record with the new key.
enum RekeyCommand: Command {
    static let name = "rekey"
    static let synopsis = "rekey --key-file OLD --new-key-file NEW"
    static let summary = "Reseals every record of an encrypted store with a new key."
    static let details = """
        Arguments:
          --key-file OLD      the store's current key (32 raw bytes or 64 hex digits)
          --new-key-file NEW  the key to seal every record with from now on
        From its start the store's key is NEW: an app opens it with NEW (and OLD among its previous
        keys while records sealed with OLD remain), no longer with OLD alone. Records are resealed in
        bounded transactions: a rekey that is interrupted (even killed) is finished by running it again
        with the same two files. Afterwards NEW alone opens the store and reads every record (records an
        app still running with OLD as its key committed before the rekey's last transaction included; such
        an app goes on sealing with OLD until it is reopened with NEW, and a rekey run again reseals what it
        committed after that, so reopen apps before dropping OLD). Only the
        seal changes: compressed payloads stay compressed. Without --key-file, rekey seals the
        records of a store that was not encrypted yet, and records NEW as its key when every record is
        sealed (until then an app given a key is refused at open). The old bytes (plaintext, or sealed with OLD)
        stay in the file's free pages until LMDB reuses them: `compact --output DIR` writes a copy
        without them.
        """
    static let spec = ArgumentSpec(options: ["new-key-file"])

    static func validate(_ arguments: ParsedArguments) throws(UsageError) {
        if arguments.value("new-key-file") == nil { throw UsageError("rekey needs --new-key-file NEW") }
    }

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let progress = ProgressDisplay()
        let result = try await store.rekey(progress: progress.handler)
        progress.finish()
        try output.result(
            ["resealed": result.resealed, "failed": result.failed],
            text: "Resealed \(result.resealed) records with the new key"
                + (result.failed == 0 ? "." : "; \(result.failed) records fail authentication (see verify)."))
        return result.failed == 0 ? 0 : 1
    }
}
