/// Bounds on what a store, or one type in it, may hold: a bounded cache.
///
/// Set them for the whole store with ``LocalStorageConfiguration/limits`` and for one type with
/// ``LocalStorable/storageLimits``. Either bound may be nil (no bound). Every commit leaves every limit
/// satisfied: the writer evicts, in the commit that passed a limit, expired records first, then the
/// ``StorageEvictionPolicy``'s victims; the records written by that commit go last. Each eviction is a
/// ``StorageChange/deleted(id:)`` on change streams.
///
/// ```swift
/// var config = LocalStorageConfiguration()
/// config.limits = StorageLimits(maxRecords: 100_000, maxBytes: 512 << 20)
/// ```
public struct StorageLimits: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The most records that may be stored; nil for no bound.
    public var maxRecords: Int?
    /// The most payload bytes (what ``StorageMetadata/sizeInBytes`` reports, summed) that may be stored;
    /// nil for no bound.
    public var maxBytes: Int?

    /// Limits of at most `maxRecords` records and `maxBytes` payload bytes; nil for no bound.
    public init(maxRecords: Int? = nil, maxBytes: Int? = nil) {
        self.maxRecords = maxRecords
        self.maxBytes = maxBytes
    }

    /// Whether neither bound is set.
    public var isUnbounded: Bool { maxRecords == nil && maxBytes == nil }

    /// For example `maxRecords: 1000, maxBytes: 65536`.
    public var description: String {
        [maxRecords.map { "maxRecords: \($0)" }, maxBytes.map { "maxBytes: \($0)" }]
            .compactMap { $0 }.joined(separator: ", ").nonEmpty ?? "no limits"
    }

    /// Why these limits cannot be used, or nil: a bound below 1.
    var problem: String? {
        if let maxRecords, maxRecords < 1 { return "maxRecords must be at least 1 (got \(maxRecords))" }
        if let maxBytes, maxBytes < 1 { return "maxBytes must be at least 1 (got \(maxBytes))" }
        return nil
    }
}

/// Which records a bounded store evicts first, after the expired ones.
public enum StorageEvictionPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Keeps what the workload reuses (the default): weighs how often and how recently each record is
    /// read, resists one-pass scans and one-time records, and adapts when popularity shifts (a window
    /// of new records, a frequency sketch that decides which records enter the main space, a protected
    /// segment for records used again; W-TinyLFU). Reads are noted in memory and folded in by the writer,
    /// as for ``leastRecentlyUsed``; see the "A Bounded Cache" article for the figures and the bound.
    case adaptive
    /// The records read or written longest ago. Reads are noted in memory and folded into the store in
    /// batches by the writer, so a read costs no write; see the "A Bounded Cache" article for the bound
    /// this gives.
    case leastRecentlyUsed
    /// The records written longest ago.
    case leastRecentlyUpdated
    /// The records that expire soonest; records that never expire go after them, oldest written first.
    case soonestExpiring
}

extension String {
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
