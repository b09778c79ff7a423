import Foundation
@_spi(Testing) import LocalStorageKit
import LocalStorageTestSupport

/// The `overwrite` modes: another process writing the store as a test tells it.
extension LocalStorageStress {
    /// Writes `StressRecord`s as told on standard input (`save ID SEQUENCE`, `batch PREFIX COUNT SEQUENCE`,
    /// `expire ID SECONDS`, `delete ID`, `clear`), one line a command, replying `ok` once the write returned (it
    /// is committed then), or `error: …`. With `keyHex` (64 hex digits) the store is opened with that encryption
    /// key; with `retention`, its change log keeps that many changes.
    static func overwrite(directory: String, keyHex: String?, retention: Int? = nil) async throws {
        var configuration = configuration(directory, durability: .none, mapSize: 1 << 20)
        if let retention { configuration.changeLogRetention = retention }
        if let keyHex {
            var key: [UInt8] = []
            var digits = keyHex[...]
            while digits.count >= 2, let byte = UInt8(digits.prefix(2), radix: 16) {
                key.append(byte)
                digits = digits.dropFirst(2)
            }
            guard digits.isEmpty else { throw StressError(description: "the key is not hex") }
            configuration.encryption = StorageEncryption(key: Data(key))
        }
        let storage = try LocalStorage(configuration: configuration)
        await serveCommands { words in
            switch words.first {
            case "save" where words.count == 3:
                guard let sequence = Int(words[2]) else { throw StressError(description: "bad sequence") }
                try await storage.save(StressRecord.make(id: words[1], sequence: sequence))
            case "batch" where words.count == 4:
                guard let count = Int(words[2]), let sequence = Int(words[3]) else {
                    throw StressError(description: "bad count or sequence")
                }
                try await storage.save(
                    contentsOf: (0..<count).map { StressRecord.make(id: "\(words[1])\($0)", sequence: sequence) })
            case "expire" where words.count == 3:
                guard let seconds = Double(words[2]) else { throw StressError(description: "bad seconds") }
                try await storage.setExpiration(StressRecord.self, id: words[1], .seconds(seconds))
            case "delete" where words.count == 2:
                try await storage.delete(StressRecord.self, id: words[1])
            case "clear" where words.count == 1:
                try await storage.deleteAll(StressRecord.self)
            default:
                throw StressError(description: "unknown command \(words.joined(separator: " "))")
            }
            return "ok"
        }
    }
}
