/// The format new payloads are written in. A store may hold both; each record says which it uses.
public enum StorageCodec: Sendable, Hashable {
    /// Foundation's `JSONEncoder` / `JSONDecoder`.
    case json
    /// LocalStorageKit's compact, self-describing binary Codable format (faster to decode). It writes as
    /// `encode(to:)` goes: writing into a container after a later sibling was written fails with
    /// `encodingFailed` (``json`` accepts it).
    case binary
}
