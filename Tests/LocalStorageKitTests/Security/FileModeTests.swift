import Foundation
import Testing

@testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The permission bits of store files and folders (API.md "Security and space"). Serialized: the tests
/// set the process-wide umask.
@Suite(.serialized) struct FileModeTests {
    /// The permission bits of `url`, or nil when it does not exist.
    static func mode(_ url: URL) -> Int? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        return Int(info.st_mode) & 0o777
    }

    /// The modes of a store directory's folder, `data.mdb` and `lock.mdb`.
    static func modes(of store: URL) -> [Int?] {
        [mode(store), mode(store.appendingPathComponent("data.mdb")), mode(store.appendingPathComponent("lock.mdb"))]
    }

    @Test func aNewStoreIsPrivateWhateverTheUmask() async throws {
        let configuration = diskConfiguration()
        let previous = umask(0)  // The widest umask: it must not widen the store's modes.
        defer { umask(previous) }
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "n", text: "secret"))
        #expect(Self.modes(of: configuration.storeDirectory) == [0o700, 0o600, 0o600])
    }

    @Test func filePermissionsWidenForAGroupAndTheFolderFollows() async throws {
        var configuration = diskConfiguration()
        configuration.filePermissions = 0o660
        let previous = umask(0o077)  // A narrow umask must not narrow what was asked for either.
        defer { umask(previous) }
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "n", text: "shared"))
        #expect(Self.modes(of: configuration.storeDirectory) == [0o770, 0o660, 0o660])
    }

    /// Execute bits are the folder's: `0o777` made the data and lock files executable (trial81 F5).
    @Test func executeBitsGoToTheFolderOnly() async throws {
        var configuration = diskConfiguration()
        configuration.filePermissions = 0o777
        let previous = umask(0)
        defer { umask(previous) }
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "n", text: "everyone's"))
        #expect(Self.modes(of: configuration.storeDirectory) == [0o777, 0o666, 0o666])
    }

    @Test func filePermissionsThatLockTheOwnerOutAreRefused() throws {
        var configuration = diskConfiguration()
        configuration.filePermissions = 0o440
        #expect(throws: LocalStorageError.self) { try LocalStorage(configuration: configuration) }
        configuration.filePermissions = 0o4600
        #expect(throws: LocalStorageError.self) { try LocalStorage(configuration: configuration) }
        // A negative mode is named as given, not as the octal digits of a negative number (trial73).
        configuration.filePermissions = -1
        #expect {
            try LocalStorage(configuration: configuration)
        } throws: { error in
            guard case LocalStorageError.openFailed(_, let reason) = error else { return false }
            return reason == "filePermissions -1 is negative; give permission bits (0o600)"
        }
    }

    @Test func compactAndImportKeepTheStoreMode() async throws {
        let directory = temporaryDirectory()
        var configuration = diskConfiguration(directory)
        configuration.filePermissions = 0o640
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(contentsOf: (0..<20).map(Product.sample))
        let store = configuration.storeDirectory
        #expect(Self.modes(of: store) == [0o750, 0o640, 0o640])

        let copy = directory.appendingPathComponent("compacted")
        let compact = try await CLIResult.run(
            ["compact", "--output", copy.path, "--store", store.path], environment: nil)
        #expect(compact.status == 0, "\(compact.stderr)")
        // `compact --output DIR` writes a store that opens with `databaseDirectory = DIR`.
        let copied = copy.appendingPathComponent("LocalStorage")
        #expect(Self.mode(copied) == 0o750)
        #expect(Self.mode(copied.appendingPathComponent("data.mdb")) == 0o640)

        let export = directory.appendingPathComponent("all.jsonl")
        #expect(
            try await CLIResult.run(["export", "--output", export.path, "--store", store.path], environment: nil).status
                == 0)
        // Importing into the existing store keeps its mode; into a new one gives the private default.
        let into = try await CLIResult.run(["import", export.path, "--store", store.path], environment: nil)
        #expect(into.status == 0, "\(into.stderr)")
        #expect(Self.modes(of: store) == [0o750, 0o640, 0o640])
        // The new store goes where an app with `databaseDirectory = fresh` looks: fresh/LocalStorage.
        let fresh = directory.appendingPathComponent("fresh")
        let imported = try await CLIResult.run(["import", export.path, "--store", fresh.path], environment: nil)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(Self.modes(of: fresh.appendingPathComponent("LocalStorage")) == [0o700, 0o600, 0o600])
        #expect(Self.mode(fresh.appendingPathComponent("data.mdb")) == nil)
        var app = diskConfiguration(fresh)
        app.filePermissions = 0o600
        let reopened = try LocalStorage(configuration: app)
        #expect(try await reopened.count(Product.self) == 20)
    }
}
