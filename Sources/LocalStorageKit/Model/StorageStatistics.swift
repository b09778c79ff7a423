/// What a store holds and how its bounded-cache machinery has fared: ``LocalStorage/statistics()``.
public struct StorageStatistics: Sendable, Equatable, Codable {
    /// Live and expired records of every type.
    public var records: Int
    /// The payload bytes of every record.
    public var payloadBytes: Int
    /// Records that have expired and are not purged yet (counted in ``records``).
    public var expiredRecords: Int
    /// Records evicted to keep a limit since this store was opened in this process.
    public var evictions: Int
    /// Reads the memory tier answered since the store was opened (0 without a memory tier).
    public var memoryHits: Int
    /// Reads the memory tier could not answer since the store was opened (0 without a memory tier).
    public var memoryMisses: Int
    /// Bytes of the memory map holding data (pages in use).
    public var mapUsedBytes: Int
    /// Bytes of the memory map not in use: never used, or free pages LMDB reuses (a compact gives the
    /// file's free pages back).
    public var mapFreeBytes: Int
    /// The store's limits (``LocalStorageConfiguration/limits``).
    public var limits: StorageLimits?
    /// Each type's figures, by storage name. The keys compare as Swift strings do: two storage names that differ only
    /// in Unicode normalization ("café" composed and decomposed), which the store keeps apart as it does any two names
    /// whose bytes differ, share one entry that adds up both; ``LocalStorage/statistics(for:)`` gives each.
    public var types: [String: TypeStatistics]

    /// Statistics with the given figures.
    public init(
        records: Int, payloadBytes: Int, expiredRecords: Int, evictions: Int, memoryHits: Int,
        memoryMisses: Int, mapUsedBytes: Int, mapFreeBytes: Int, limits: StorageLimits?,
        types: [String: TypeStatistics]
    ) {
        self.records = records
        self.payloadBytes = payloadBytes
        self.expiredRecords = expiredRecords
        self.evictions = evictions
        self.memoryHits = memoryHits
        self.memoryMisses = memoryMisses
        self.mapUsedBytes = mapUsedBytes
        self.mapFreeBytes = mapFreeBytes
        self.limits = limits
        self.types = types
    }
}

/// One type's figures in ``StorageStatistics``, or ``LocalStorage/statistics(for:)``.
public struct TypeStatistics: Sendable, Equatable, Codable {
    /// Live and expired records of the type.
    public var records: Int
    /// Their payload bytes.
    public var payloadBytes: Int
    /// Records that have expired and are not purged yet (counted in ``records``).
    public var expiredRecords: Int
    /// Records of the type evicted to keep a limit since the store was opened in this process.
    public var evictions: Int
    /// The type's own limits (``LocalStorable/storageLimits``), when this process knows the type: limits are declared
    /// by the Swift type, not stored, so a process that has not used the type since it opened the store has nil here.
    public var limits: StorageLimits?

    /// Figures of one type.
    public init(records: Int, payloadBytes: Int, expiredRecords: Int, evictions: Int, limits: StorageLimits?) {
        self.records = records
        self.payloadBytes = payloadBytes
        self.expiredRecords = expiredRecords
        self.evictions = evictions
        self.limits = limits
    }
}
