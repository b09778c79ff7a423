/// How a store compresses payloads (``LocalStorageConfiguration/compression``).
///
/// With ``zstd(level:threshold:)``, payloads of more than `threshold` bytes are compressed with zstd
/// (libzstd), with a dictionary the store trains from its own records once it has enough of them. The
/// store keeps each dictionary it trained, so records compressed with an older one keep reading. Reads of
/// compressed and plain payloads are transparent; compressed payloads are sealed after compression when the
/// store is encrypted.
public struct StorageCompression: Sendable, Equatable, CustomStringConvertible {
    /// zstd's compression level (1…19).
    let level: Int
    /// Payloads of at most this many bytes are stored as they are.
    let threshold: Int
    let isEnabled: Bool

    /// No compression (the default).
    public static let none = StorageCompression(level: 0, threshold: 0, isEnabled: false)

    /// Compresses payloads of more than `threshold` bytes with zstd at `level`.
    ///
    /// - Parameters:
    ///   - level: zstd's level, 1 (fastest) to 19 (smallest); 3 by default.
    ///   - threshold: payloads of at most this many bytes are left uncompressed; 64 by default.
    public static func zstd(level: Int = 3, threshold: Int = 64) -> StorageCompression {
        StorageCompression(level: min(max(level, 1), 19), threshold: max(threshold, 0), isEnabled: true)
    }

    /// `none`, or `zstd(level:threshold:)` with its settings.
    public var description: String {
        isEnabled ? "zstd(level: \(level), threshold: \(threshold))" : "none"
    }
}
