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
        ExportCommand.self, ImportCommand.self,
    ]

    static func main() async {
        let status = await run(Array(CommandLine.arguments.dropFirst()))
        exit(status)
    }

    /// Runs one command line; returns the exit status.
    static func run(_ words: [String]) async -> Int32 {
        let output = Output(isJSON: words.contains("--json"))
        guard let name = words.first else {
            output.message(usage)
            return 2
        }
        if ["help", "--help", "-h"].contains(name) {
            if let topic = words.dropFirst().first, !topic.hasPrefix("-") {
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
            let arguments = try ArgumentParser.parse(Array(words.dropFirst()), spec: command.spec)
            if arguments.has("help") {
                output.line(command.help)
                return 0
            }
            try command.validate(arguments)
            let store = try await StoreMaintenance(directory: storeDirectory(arguments),
                                                   creatingIfMissing: command.createsStore)
            return try await command.run(arguments, store: store, output: output)
        } catch let error as UsageError {
            output.message("localstorage \(command.name): \(error)")
            output.message("usage: localstorage \(command.synopsis) [--store DIR] [--json]  (--help for more)")
            return 2
        } catch {
            return fail(error, output: output)
        }
    }

    /// Reports `error` in one line; returns its exit status.
    private static func fail(_ error: any Error, output: Output) -> Int32 {
        output.message("localstorage: error: \(error)")
        return error is UsageError ? 2 : 1
    }

    /// `--store`, else `$LOCALSTORAGE_STORE`, else the library's default directory.
    static func storeDirectory(_ arguments: ParsedArguments) -> URL {
        if let path = arguments.value("store") { return URL(fileURLWithPath: path, isDirectory: true) }
        if let path = ProcessInfo.processInfo.environment["LOCALSTORAGE_STORE"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        return StoreMaintenance.defaultDirectory
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

            The store is --store DIR (the directory holding data.mdb), else $LOCALSTORAGE_STORE, else
            \(StoreMaintenance.defaultDirectory.path).
            Run localstorage <command> --help for a command's arguments.
            Exit status: 0 success, 1 problems found or the operation failed, 2 usage errors.
            """
    }
}
