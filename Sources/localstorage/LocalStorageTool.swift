import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `localstorage`: offline maintenance of a LocalStorageKit store directory.
///
/// `localstorage <command> [arguments] [--store DIR] [--json]`. Exit status: 0 success, 1 problems found
/// or the operation failed, 2 usage errors. Errors go to standard error in one line.
@main
struct LocalStorageTool {
    static let commands: [any Command.Type] = [
        StatsCommand.self, TypesCommand.self, ListCommand.self, GetCommand.self, DeleteCommand.self,
        PurgeExpiredCommand.self, ClearCommand.self, VerifyCommand.self, CompactCommand.self,
        ExportCommand.self, ImportCommand.self, RekeyCommand.self,
    ]

    static func main() async {
        let status = await run(Array(CommandLine.arguments.dropFirst()))
        exit(status)
    }

    /// Runs one command line; returns the exit status.
    static func run(_ words: [String]) async -> Int32 {
        var output = Output(isJSON: words.contains("--json"))
        let (leading, name, rest): ([String], String?, [String])
        do {
            (leading, name, rest) = try splitCommand(words)
        } catch {
            return fail(error, output: output)
        }
        guard let name else {
            if leading.contains("--help") || leading.contains("-h") {
                output.line(usage)
                return 0
            }
            output.message(usage)
            return 2
        }
        if ["help", "--help", "-h"].contains(name) {
            if let topic = rest.first, !topic.hasPrefix("-") {
                guard let command = commands.first(where: { $0.name == topic }) else {
                    return fail(UsageError("unknown command \"\(topic)\""), output: output)
                }
                output.line(command.help)
            } else {
                output.line(usage)
            }
            return 0
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            return fail(UsageError("unknown command \"\(name)\"; run localstorage --help"), output: output)
        }
        do {
            let arguments = try ArgumentParser.parse(leading + rest, spec: command.spec)
            output = Output(isJSON: arguments.has("json"))
            if arguments.has("help") {
                output.line(command.help)
                return 0
            }
            try command.validate(arguments)
            let directory = try storeDirectory(arguments, creating: command.createsStore)
            // verify opens the store itself, in a child process (a damaged file must not crash the tool).
            if command.name == VerifyCommand.name {
                return try await VerifyCommand.run(arguments, directory: directory, output: output)
            }
            // compact in place needs the store closed: before anything here opens it.
            if command.name == CompactCommand.name, arguments.value("output") == nil {
                return try CompactCommand.runInPlace(
                    directory: directory, encryption: try KeyFile.encryption(arguments), output: output)
            }
            // What a command that creates the store must remove again when it fails.
            let created = command.createsStore ? NewStore(directory) : nil
            do {
                let encryption = try KeyFile.encryption(arguments)
                let isRekey = command.name == RekeyCommand.name
                // `compact --output` only reads the store it copies.
                let onlyReads =
                    command.onlyReads || (command.name == CompactCommand.name && arguments.value("output") != nil)
                func open(movingKeyCheck: Bool) async throws -> StoreMaintenance {
                    try await StoreMaintenance(
                        directory: directory, creatingIfMissing: command.createsStore, encryption: encryption,
                        movesKeyCheck: movingKeyCheck, sealingPlainStore: isRekey, upgradesLayout: !onlyReads)
                }
                // An import into a store that has a key check value moves it to the new key once the import has
                // committed: moved at the open, a failed import left apps with the old key alone locked out. A
                // store without one takes the key at the open (or refuses it, holding plain records). Each store
                // below is released before the next open: opens in one process share a store that is still open.
                var movesKeyCheck = isRekey || command.name == ImportCommand.name
                if command.name == ImportCommand.name, created == nil, encryption != nil {
                    movesKeyCheck = try await !open(movingKeyCheck: false).hasKeyCheck
                }
                let status: Int32
                do {
                    let store = try await open(movingKeyCheck: movesKeyCheck)
                    // An app given a key for this store is refused; the tool reads it all the same, and says so.
                    if encryption != nil, !isRekey, command.name != ImportCommand.name, !store.hasKeyCheck {
                        output.message("localstorage: note: the store is not encrypted; the key file was not used")
                    }
                    status = try await command.run(arguments, store: store, output: output)
                }
                if status != 0 { try created?.remove() }
                if status == 0, command.name == ImportCommand.name, !movesKeyCheck {
                    _ = try await open(movingKeyCheck: true)
                }
                return status
            } catch {
                do {
                    try created?.remove()
                } catch let cleanup {
                    output.message("localstorage: error: " + InvisibleCharacters.escaped("\(cleanup)", keeping: []))
                }
                throw error
            }
        } catch let error as UsageError {
            output.message("localstorage \(command.name): " + InvisibleCharacters.escaped("\(error)", keeping: []))
            output.message("usage: localstorage \(command.synopsis) [--store DIR] [--json]  (--help for more)")
            return 2
        } catch {
            return fail(error, output: output)
        }
    }

    /// Splits a command line into the global options before the command, the command, and the words after it.
    ///
    /// Global options (`--store DIR`, `--store=DIR`, `--json`, `--help`) may come before the command as
    /// well as after it.
    static func splitCommand(
        _ words: [String]
    ) throws(UsageError) -> (
        leading: [String], command: String?,
        rest: [String]
    ) {
        var leading: [String] = []
        var index = 0
        while index < words.count {
            let word = words[index]
            let name = word.hasPrefix("--") ? String(word.dropFirst(2).prefix { $0 != "=" }) : nil
            if word == "-h" || name.map({ ArgumentParser.globalFlags.contains($0) }) == true {
                leading.append(word)
                index += 1
            } else if let name, ArgumentParser.globalOptions.contains(name) {
                leading.append(word)
                index += 1
                if !word.contains("=") {
                    guard index < words.count else { throw UsageError("--\(name) needs a value") }
                    leading.append(words[index])
                    index += 1
                }
            } else if word.hasPrefix("-") {
                throw UsageError("unknown option \(word) before the command; run localstorage --help")
            } else {
                return (leading, word, Array(words[(index + 1)...]))
            }
        }
        return (leading, nil, [])
    }

    /// Reports `error` in one line (a name or id in it with a line break or another invisible character
    /// escaped, as every command prints them); returns its exit status.
    private static func fail(_ error: any Error, output: Output) -> Int32 {
        output.message("localstorage: error: " + message(for: error))
        return error is UsageError ? 2 : 1
    }

    /// `error`'s line: a list of the store's types spells each name as `types` prints it and TYPE takes it back
    /// (a name with a control character as a quoted JSON string), where the error's own text escaped the
    /// characters without the quotes (trial83 F7).
    static func message(for error: any Error) -> String {
        if case .unknownType(let name, let known)? = error as? MaintenanceError {
            return InvisibleCharacters.escaped("the store has no type \"\(name)\"", keeping: [])
                + (known.isEmpty ? "" : " (it has: \(known.map(TypeArgument.displayed).joined(separator: ", ")))")
        }
        return InvisibleCharacters.escaped("\(error)", keeping: [])
    }

    /// `--store`, else `$LOCALSTORAGE_STORE`, else the library's default directory.
    static func storeDirectory(_ arguments: ParsedArguments) throws -> URL {
        if let path = arguments.value("store") {
            // An empty --store would be the current directory: never what was meant.
            guard !path.isEmpty else { throw UsageError("--store needs a directory") }
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        if let path = ProcessInfo.processInfo.environment["LOCALSTORAGE_STORE"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        return StoreMaintenance.defaultDirectory
    }

    /// The store directory the arguments name (``StoreMaintenance/storeDirectory(named:)``). Where no store
    /// is yet and the command creates one (`import`), `--store DIR` is the app's `databaseDirectory`: the store
    /// goes in DIR/LocalStorage, where the app will look, unless DIR already is a folder of that name (the
    /// store folder itself, which is what `--store` names for an existing store). The default store (no
    /// `--store`) is the store folder itself.
    static func storeDirectory(_ arguments: ParsedArguments, creating: Bool) throws -> URL {
        let given = try storeDirectory(arguments).standardizedFileURL
        let directory = StoreMaintenance.storeDirectory(named: given)
        let exists = FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path)
        guard creating, !exists, given != StoreMaintenance.defaultDirectory.standardizedFileURL else {
            return directory
        }
        // `LocalStorageConfiguration.databaseDirectory`: "The store itself lives in a `LocalStorage` folder inside it."
        let folder = "LocalStorage"
        return given.lastPathComponent == folder ? given : given.appendingPathComponent(folder, isDirectory: true)
    }

    static var usage: String {
        let width = commands.map { $0.name.count }.max() ?? 0
        let list = commands.map {
            "  " + $0.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.summary
        }
        return """
            usage: localstorage <command> [arguments] [--store DIR] [--json]

            Maintenance of a LocalStorageKit store, safe while an app has it open.

            Commands:
            \(list.joined(separator: "\n"))

            The store is --store DIR, else $LOCALSTORAGE_STORE, else
            \(StoreMaintenance.defaultDirectory.path).
            DIR is the directory holding data.mdb (or that data.mdb), or the app's databaseDirectory (the
            store is then DIR/LocalStorage). --store, --key-file and --json may come before or after the command.
            An encrypted store needs --key-file FILE (its 32-byte key, raw or as 64 hex digits), and
            during a key rotation --previous-key-file OLD for the records not resealed yet.
            Run localstorage <command> --help for a command's arguments.
            Exit status: 0 success, 1 problems found or the operation failed, 2 usage errors.
            """
    }
}

/// A store a command is about to create, so that a failed command leaves nothing behind: the files it
/// adds and the directories it makes. Nil when the store exists already.
struct NewStore {
    /// The store's files, to be removed.
    let files: [URL]
    /// The outermost directory that did not exist yet, if any.
    let firstNewDirectory: URL?

    init?(_ directory: URL) {
        let manager = FileManager.default
        guard !manager.fileExists(atPath: directory.appendingPathComponent("data.mdb").path) else { return nil }
        // compaction.lock: the store's own lock (StoreOpenLock), held shared by every opener.
        files = ["data.mdb", "lock.mdb", "compaction.lock"].map { directory.appendingPathComponent($0) }
            .filter { !manager.fileExists(atPath: $0.path) }
        var missing: URL?
        var current = directory.standardizedFileURL
        while !manager.fileExists(atPath: current.path), current.path != "/" {
            missing = current
            current = current.deletingLastPathComponent()
        }
        firstNewDirectory = missing
    }

    /// Removes what the command created.
    func remove() throws {
        let manager = FileManager.default
        if let firstNewDirectory {
            if manager.fileExists(atPath: firstNewDirectory.path) { try manager.removeItem(at: firstNewDirectory) }
            return
        }
        for file in files where manager.fileExists(atPath: file.path) {
            try manager.removeItem(at: file)
        }
    }
}
