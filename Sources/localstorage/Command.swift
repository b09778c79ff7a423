@_spi(Maintenance) import LocalStorageKit

/// One subcommand: its name, help text, accepted arguments and what it does.
protocol Command: Sendable {
    /// The word that selects the command.
    static var name: String { get }
    /// The synopsis after `localstorage`, e.g. `get TYPE ID`.
    static var synopsis: String { get }
    /// One line for the command list.
    static var summary: String { get }
    /// Details for `--help`: arguments and options, one per line.
    static var details: String { get }
    /// The arguments it accepts.
    static var spec: ArgumentSpec { get }
    /// Whether the command may create the store when there is none.
    static var createsStore: Bool { get }
    /// Whether the command only reads the store: its open leaves an older layout as it is (an upgrade would lock
    /// the older version that wrote the store out of it).
    static var onlyReads: Bool { get }

    /// Checks arguments that need no store, before the store is opened.
    static func validate(_ arguments: ParsedArguments) throws(UsageError)

    /// Runs the command; returns the exit status (0 success, 1 problems found).
    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32
}

extension Command {
    static var createsStore: Bool { false }
    static var onlyReads: Bool { false }

    static func validate(_ arguments: ParsedArguments) throws(UsageError) {}

    /// The text `--help` prints.
    static var help: String {
        var text = "usage: localstorage \(synopsis) [--store DIR] [--json]\n\n\(summary)\n"
        if !details.isEmpty { text += "\n\(details)\n" }
        text += """

            Global options:
              --store DIR   the store: the directory holding data.mdb (or that file), or the app's
                            databaseDirectory (the store is then DIR/LocalStorage); default
                            $LOCALSTORAGE_STORE, then the library's default directory
              --key-file FILE
                            the key of an encrypted store (32 raw bytes or 64 hex digits)
              --previous-key-file FILE
                            a key the store was sealed with before (repeatable): during a rotation,
                            the records not resealed yet are read with it
              --json        machine-readable output
              --help, -h    this help
            Global options may come before or after the command.
            """
        return text
    }
}
