import Foundation

@testable import LocalStorageKit

/// A store on disk made by the library and open in this process, as an app would have it.
struct IntegrityStore {
    /// The databaseDirectory.
    let directory: URL
    let storage: LocalStorage

    /// The directory holding data.mdb.
    var storeDirectory: URL { storage.configuration.storeDirectory }

    init(_ fill: (LocalStorage) async throws -> Void) async throws {
        directory = temporaryDirectory()
        storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await fill(storage)
    }

    /// Runs the CLI with `--store` (the store directory unless `store` says otherwise).
    func run(_ arguments: [String], store: URL? = nil) async throws -> CLIResult {
        var arguments = arguments
        if !arguments.contains("--store") { arguments += ["--store", (store ?? storeDirectory).path] }
        return try await CLIResult.run(arguments, environment: nil)
    }
}
