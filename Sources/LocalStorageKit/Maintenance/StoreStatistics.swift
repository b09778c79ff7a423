/// What `stats` reports: the memory map, pages, readers and each type's records and indexes.
@_spi(Maintenance) public struct StoreStatistics: Codable, Sendable {
    /// Page counts of the whole environment.
    public struct Pages: Codable, Sendable {
        /// Pages the map can hold (map size / page size).
        public var capacity: Int
        /// Pages written so far (the data file's high-water mark).
        public var used: Int
        /// Used pages on LMDB's free list, ready for reuse.
        public var free: Int
        /// Branch pages of every database.
        public var branch: Int
        /// Leaf pages of every database.
        public var leaf: Int
        /// Overflow pages (values too large for a leaf) of every database.
        public var overflow: Int
    }

    /// One index of a type.
    public struct Index: Codable, Sendable {
        /// The index name.
        public var name: String
        /// `"string"` or `"number"`.
        public var kind: String
        /// Entries in the index (one per indexed record).
        public var entries: Int
        /// Whether the declaration the type was last registered with has the index; false for an index only
        /// another declaration has (an app's and its extension's may differ), listed while it holds entries.
        public var isDeclared = true

        init(name: String, kind: String, entries: Int, isDeclared: Bool = true) {
            self.name = name
            self.kind = kind
            self.entries = entries
            self.isDeclared = isDeclared
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            kind = try container.decode(String.self, forKey: .kind)
            entries = try container.decode(Int.self, forKey: .entries)
            // Absent in the output of versions before it.
            isDeclared = try container.decodeIfPresent(Bool.self, forKey: .isDeclared) ?? true
        }
    }

    /// One database of the store: its pages, tree depth and entries (`mdb_stat`).
    public struct Database: Codable, Sendable {
        /// `Type/records`, `Type/updated`, `Type/expiry`, `Type/signatures`, `Type/index NAME`, or a store-wide
        /// database: `meta`, `changes`, `counts`, `leases`, the eviction policies' state, `(main)` (the names of
        /// the others), `(free pages)` (LMDB's free list).
        public var name: String
        /// Levels of its B-tree.
        public var depth: Int
        /// Branch pages.
        public var branchPages: Int
        /// Leaf pages.
        public var leafPages: Int
        /// Overflow pages (values too large for a leaf).
        public var overflowPages: Int
        /// Entries.
        public var entries: Int

        /// Every page of the database.
        public var pages: Int { branchPages + leafPages + overflowPages }
    }

    /// One stored type.
    public struct TypeStatistics: Codable, Sendable {
        /// The type's storage name.
        public var name: String
        /// Records stored, expired ones included until they are purged.
        public var records: Int
        /// Bytes of the stored records (headers and payloads).
        public var bytes: Int
        /// Bytes of the payloads alone (of the records whose header reads).
        public var payloadBytes: Int
        /// Records whose bytes cannot be read (`verify` names them, `verify --repair` removes them).
        public var damaged: Int
        /// Records a newer version of LocalStorageKit wrote (a later header layout or payload format), which this
        /// version leaves as they are.
        public var newer: Int = 0
        /// Records that have expired but are not purged yet.
        public var expired: Int
        /// Records indexed under another declaration of the type's indexes: the app re-indexes them at its
        /// first indexed query of the type; until then, an index they did not have holds no entry for them.
        public var notReindexed: Int = 0
        /// Pages of the type's databases (records and indexes).
        public var pages: Int
        /// Entries of the update-time index.
        public var updateEntries: Int
        /// Whether the type keeps its update-time index: from layout 6 on, only once a query sorted by update time,
        /// an eviction or a re-index walked it (``FetchOptions/Sort/newestFirst``).
        public var keepsUpdateOrder: Bool = true
        /// Entries of the expiry index.
        public var expiryEntries: Int
        /// The declared indexes.
        public var indexes: [Index]
    }

    /// The store directory.
    public var path: String
    /// The size of the memory map in bytes.
    public var mapSize: Int
    /// Bytes in use: pages written so far times the page size.
    public var usedBytes: Int
    /// The page size in bytes.
    public var pageSize: Int
    /// Page counts.
    public var pages: Pages
    /// Reader slots held by some process right now.
    public var readersInUse: Int
    /// Reader slots the store allows.
    public var maxReaders: Int
    /// The id of the last committed transaction.
    public var lastTransactionID: Int
    /// The store's on-disk layout (docs: On-Disk Format): a version of LocalStorageKit opens a store of its own
    /// layout or an older one. Nil for a store without a layout marker.
    public var layout: Int? = nil
    /// Every stored type, in name order.
    public var types: [TypeStatistics]

    // MARK: - The totals and the space a compact gives back (what `LocalStorage.statistics()` reports)

    /// Records of every type, expired ones included until they are purged.
    public var records: Int = 0
    /// Payload bytes of every record whose header reads.
    public var payloadBytes: Int = 0
    /// Records of every type whose bytes cannot be read (`verify` names them, `verify --repair` removes them).
    public var damaged: Int = 0
    /// Records of every type that have expired but are not purged yet.
    public var expired: Int = 0
    /// Bytes of map pages holding data: pages written so far minus the free ones (`mapUsedBytes`).
    public var mapUsedBytes: Int = 0
    /// Bytes of the map not holding data: never written, or free pages (`mapFreeBytes`).
    public var mapFreeBytes: Int = 0
    /// The size of the data file on disk (an LMDB file never shrinks by itself, unless compacted).
    public var fileBytes: Int = 0
    /// Bytes of the data file in free pages: what a `compact` gives back (about; it also packs pages).
    public var reclaimableBytes: Int = 0
    /// The data file's free pages (on LMDB's free list, or past the last page written) over all its pages:
    /// the figure `compaction: .onOpen(whenFreeFractionExceeds:)` compares with its threshold.
    public var freeFraction: Double = 0
    /// The pages, depth and entries of each database the store knows, largest first.
    public var databases: [Database] = []
}
