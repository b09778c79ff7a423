/// A memory tier in front of the store: decoded values of hot records, so a hit costs a lookup instead of
/// a read and a decode.
///
/// Set it with ``LocalStorageConfiguration/memoryCache`` (nil, the default, keeps none). It is never
/// stale: a write by this process or any other invalidates a value before any later read can see it.
///
/// ```swift
/// config.memoryCache = MemoryCacheConfiguration(maxRecords: 10_000, maxBytes: 64 << 20)
/// ```
public struct MemoryCacheConfiguration: Sendable, Hashable, Codable {
    /// The most values held.
    public var maxRecords: Int
    /// The most payload bytes (the stored size of the values held) held.
    public var maxBytes: Int

    /// A memory tier of at most `maxRecords` values and `maxBytes` payload bytes.
    public init(maxRecords: Int = 10_000, maxBytes: Int = 64 << 20) {
        self.maxRecords = maxRecords
        self.maxBytes = maxBytes
    }
}
