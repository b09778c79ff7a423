import Foundation
import Testing

@testable import LocalStorageKit

/// A fresh directory for one test's store, inside this test process's own folder under the system's
/// temporary directory. The folder is removed when the process exits, so a run leaves nothing behind.
func temporaryDirectory() -> URL {
    let url = TestFolder.root.appendingPathComponent(UUID().uuidString, isDirectory: true)
    do {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    } catch {
        // The test that uses the directory fails on its own, with the store's error naming the path.
        print("could not create \(url.path): \(error)")
    }
    return url
}

/// The test process's folder of temporary directories, removed at exit.
private enum TestFolder {
    static let root: URL = {
        let root = FileManager.default.temporaryDirectory
            .appendingPathComponent("LocalStorageKitTests-\(getpid())-\(UUID().uuidString)", isDirectory: true)
        atexit { TestFolder.removeRoot() }
        return root
    }()

    private static func removeRoot() {
        do {
            try FileManager.default.removeItem(at: root)
        } catch CocoaError.fileNoSuchFile {
            // No test of this process made a directory.
        } catch {
            print("could not remove \(root.path): \(error)")
        }
    }
}

/// A configuration for a store on disk in a fresh temporary directory.
func diskConfiguration(
    _ directory: URL = temporaryDirectory(),
    durability: StorageDurability = .none
) -> LocalStorageConfiguration {
    var configuration = LocalStorageConfiguration()
    configuration.databaseDirectory = directory
    configuration.durability = durability
    configuration.expirySweepInterval = nil
    return configuration
}

/// The seed's product.
struct Product: LocalStorageIndexed, Equatable {
    let id: String
    var title: String
    var category: String
    var price: Double
    var rating: Double

    static var storageIndexes: [StorageIndex<Product>] {
        [
            StorageIndex("category", \.category),
            StorageIndex("price", \.price),
            StorageIndex("rating", \.rating),
        ]
    }

    static func sample(_ n: Int) -> Product {
        Product(
            id: "sku_\(n)", title: "Product \(n)", category: ["books", "electronics", "toys"][n % 3],
            price: Double(n % 500) + 0.5, rating: Double(n % 50) / 10)
    }
}

/// The seed's user.
struct User: LocalStorageIndexed, Equatable {
    enum Role: String, Codable, Sendable { case admin, editor, viewer }
    let id: String
    var name: String
    var email: String
    var role: Role
    var age: Int
    var lastSeen: Date

    static var storageIndexes: [StorageIndex<User>] {
        [
            .string("role") { $0.role.rawValue },
            .number("age") { $0.age },
            .number("lastSeen") { $0.lastSeen },
            .string("email") { $0.email },
        ]
    }

    static let mock = User(
        id: "usr_42", name: "Ada", email: "ada@example.com", role: .admin, age: 36,
        lastSeen: Date(timeIntervalSince1970: 1_700_000_000))
}

/// A type without indexes.
struct Note: LocalStorable, Equatable {
    let id: String
    var text: String
}

/// The reason of the `decodingFailed` that `body` throws; nil when it throws nothing or another error.
func decodingFailure(_ body: () async throws -> Void) async -> String? {
    do {
        try await body()
    } catch LocalStorageError.decodingFailed(let reason) {
        return reason
    } catch {
        return nil
    }
    return nil
}

/// An open of the store in `directory` with compaction at open (a threshold of 0.1) is refused, and leaves its data
/// file as it was: the same inode (not a compacted copy swapped in) and the same bytes.
func expectRefusedWithoutCompaction(_ directory: URL) throws {
    let data = storeFilesDirectory(directory).appendingPathComponent("data.mdb")
    let before = try Data(contentsOf: data)
    var inode = stat()
    #expect(stat(data.path, &inode) == 0)
    var configuration = diskConfiguration(directory)
    configuration.compaction = .onOpen(whenFreeFractionExceeds: 0.1)
    #expect(throws: LocalStorageError.self) { _ = try LocalStorage(configuration: configuration) }
    var after = stat()
    #expect(stat(data.path, &after) == 0)
    #expect(after.st_ino == inode.st_ino)
    #expect(try Data(contentsOf: data) == before)
}

/// Builds `type`'s update order (``UpdateOrder``), as the first query sorted by update time does.
func keepUpdateOrder<T: LocalStorable>(_ type: T.Type, in storage: LocalStorage) async throws {
    let schema = try await storage.core.schema(for: T.self)
    try await storage.core.writer.perform { context in _ = try UpdateOrder.keep(schema, context: context) }
}
