// The code listings of the DocC article "Configuring a Store", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum ConfigurationSnippets {
    static func configured() throws -> LocalStorage {
        // snippet: configuration-fields
        var config = LocalStorageConfiguration()
        config.databaseDirectory = .applicationSupportDirectory  // on Linux: $XDG_DATA_HOME or ~/.local/share
        config.durability = .relaxed  // .full (default), .relaxed (MDB_NOMETASYNC), .none (MDB_NOSYNC)
        config.autoPurgeExpiredOnRead = true  // delete the expired records reads meet
        config.mapSize = 64 << 20  // the first map on iOS, which grows on demand…
        config.maxMapSize = 8 << 30  // …up to this (mapped at open elsewhere), then .storageFull
        config.codec = .binary  // the default; .json stores Foundation JSON
        config.logger = ConsoleStorageLogger(minimumLevel: .info)
        let storage = try LocalStorage(configuration: config)
        // snippet-end
        return storage
    }

    static func logged() throws -> LocalStorage {
        // snippet: configuration-logger
        let logged = try LocalStorage(configuration: .default, logger: ConsoleStorageLogger(minimumLevel: .warning))
        // snippet-end
        return logged
    }
}
