import Foundation

/// Encryption at rest of a store's payloads (``LocalStorageConfiguration/encryption``).
///
/// Every payload is sealed under ``key`` with a fresh random nonce per write (libsodium's AES-256-GCM where the
/// CPU has AES instructions, for at most 2³¹ seals per key and store, else XChaCha20-Poly1305), and bound to
/// its type and id: a payload altered, or copied to another id or type, fails to open
/// and reads throw ``LocalStorageError/decodingFailed(reason:)`` naming the type and id. The key is used as
/// it is (no key derivation at open): pass 32 random bytes the app keeps, e.g. in the Keychain.
///
/// Ids, type names, index names and indexed values, timestamps and expiry times stay readable on disk:
/// the store's keys and record headers need them in order.
///
/// ```swift
/// var config = LocalStorageConfiguration()
/// config.encryption = StorageEncryption(key: key)                               // 32 bytes
/// config.encryption = StorageEncryption(key: newKey, previousKeys: [oldKey])   // rotation
/// ```
public struct StorageEncryption: Sendable, Equatable, CustomStringConvertible {
    /// The number of bytes a key has.
    public static let keyLength = 32

    /// The key new payloads are sealed with: ``keyLength`` bytes.
    public var key: Data
    /// Keys the store was sealed with before ``key``: records sealed with one of them are read, and resealed
    /// with ``key`` as they are met; `localstorage rekey` reseals the rest.
    public var previousKeys: [Data]

    /// Seals payloads with `key`, reading (and resealing) records sealed with any of `previousKeys`.
    ///
    /// A key of another length than ``keyLength`` makes the open throw
    /// ``LocalStorageError/openFailed(path:reason:)``.
    public init(key: Data, previousKeys: [Data] = []) {
        self.key = key
        self.previousKeys = previousKeys
    }

    /// A description that never shows a key.
    public var description: String {
        "StorageEncryption(key: \(key.count) bytes, previousKeys: \(previousKeys.count))"
    }

    /// Why these keys cannot be used, or nil.
    var problem: String? {
        for (position, candidate) in ([key] + previousKeys).enumerated() where candidate.count != Self.keyLength {
            let name = position == 0 ? "the encryption key" : "previous key \(position)"
            return "\(name) has \(candidate.count) bytes; a key has exactly \(Self.keyLength) bytes"
        }
        return nil
    }
}
