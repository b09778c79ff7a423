import Foundation
@_spi(Maintenance) import LocalStorageKit

/// Reads an encryption key from a file: 32 raw bytes, or 64 hexadecimal digits (surrounding whitespace
/// ignored).
enum KeyFile {
    static func read(_ path: String, option: String) throws -> Data {
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw MaintenanceError.invalidArgument("--\(option): cannot read \(path)")
        }
        if contents.count == StorageEncryption.keyLength { return contents }
        let text = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.count == 2 * StorageEncryption.keyLength, text.allSatisfy(\.isHexDigit) {
            var bytes: [UInt8] = []
            var index = text.startIndex
            while index < text.endIndex {
                let next = text.index(index, offsetBy: 2)
                guard let byte = UInt8(text[index..<next], radix: 16) else { break }
                bytes.append(byte)
                index = next
            }
            if bytes.count == StorageEncryption.keyLength { return Data(bytes) }
        }
        throw MaintenanceError.invalidArgument(
            "--\(option): \(path) holds \(contents.count) bytes; a key file holds 32 raw bytes or 64 hex digits")
    }

    /// The store's encryption as the command line gives it: `--key-file`, with each `--previous-key-file`
    /// as a previous key (the records a rotation has not resealed yet), and for `rekey` the new key
    /// (`--new-key-file`) with `--key-file` as the first previous one.
    static func encryption(_ arguments: ParsedArguments) throws -> StorageEncryption? {
        let key = try arguments.value("key-file").map { try read($0, option: "key-file") }
        let previous = try (arguments.options["previous-key-file"] ?? []).map {
            try read($0, option: "previous-key-file")
        }
        if let newPath = arguments.value("new-key-file") {
            let newKey = try read(newPath, option: "new-key-file")
            return StorageEncryption(key: newKey, previousKeys: (key.map { [$0] } ?? []) + previous)
        }
        guard let key else {
            if previous.isEmpty { return nil }
            throw UsageError("--previous-key-file needs the store's key too (--key-file)")
        }
        return StorageEncryption(key: key, previousKeys: previous)
    }
}
