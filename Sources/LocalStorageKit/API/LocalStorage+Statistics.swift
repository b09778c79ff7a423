extension LocalStorage {
    /// What the store holds and how its bounded-cache machinery has fared: records, payload bytes and
    /// expired records per type and in all, evictions since the store opened in this process, this
    /// store's memory-tier hits and misses, and how much of the memory map is in use.
    ///
    /// ```swift
    /// let usage = try await storage.statistics()
    /// print(usage.records, usage.payloadBytes, usage.types["Product"]?.expiredRecords ?? 0)
    /// ```
    /// The record figures come from one snapshot. Every type the store holds is listed, including types this
    /// process never used (written by another app or an earlier version); their ``TypeStatistics/limits`` are
    /// nil, as the limits of a type live in its code. A type whose databases are damaged is left out (and
    /// logged once): `localstorage verify` names it.
    ///
    /// Complexity: O(types + expired records + free-page runs); O(records) of a type only on a store without
    /// counters. Nothing is decoded.
    /// - Throws: ``LocalStorageError`` when the store cannot be read.
    nonisolated(nonsending) public func statistics() async throws -> StorageStatistics {
        try await operation("statistics") {
            let schemas = try await core.allSchemas()
            let now = core.clock.wallNanoseconds()
            let environment = core.environment
            let info = environment.info()
            let pageSize = try environment.mainStatistics().pageSize
            let (figures, freePages) = try environment.read { txn in
                (
                    try schemas.values.map { ($0.name, try typeStatistics($0, now: now, txn: txn)) },
                    try txn.freePageCount()
                )
            }
            // Two types whose names differ only in Unicode normalization are stored apart but are one key of a
            // `[String: …]`: that entry adds up both. The totals count every type.
            let types = Dictionary(figures, uniquingKeysWith: { $0.adding($1) })
            let usedBytes = max(0, info.lastPage + 1 - freePages) * pageSize
            return StorageStatistics(
                records: figures.reduce(0) { $0 + $1.1.records },
                payloadBytes: figures.reduce(0) { $0 + $1.1.payloadBytes },
                expiredRecords: figures.reduce(0) { $0 + $1.1.expiredRecords },
                evictions: core.evictions.total,
                memoryHits: tiers.memoryCounts.hits, memoryMisses: tiers.memoryCounts.misses,
                mapUsedBytes: usedBytes, mapFreeBytes: max(0, info.mapSize - usedBytes),
                limits: core.limits.store, types: types)
        }
    }

    /// The figures of `T`: records, payload bytes, expired records, evictions since the store opened in this
    /// process and the type's limits.
    ///
    /// Complexity: O(expired records of `T`); O(records of `T`) only on a store without counters.
    /// - Throws: ``LocalStorageError`` when the store cannot be read.
    nonisolated(nonsending) public func statistics<T: LocalStorable>(for type: T.Type) async throws -> TypeStatistics {
        try await operation("statistics(for:)") {
            let schema = try await core.schema(for: T.self)
            let now = core.clock.wallNanoseconds()
            return try core.environment.read { txn in try typeStatistics(schema, now: now, txn: txn) }
        }
    }

    private func typeStatistics(_ schema: TypeSchema, now: Int64, txn: Transaction) throws -> TypeStatistics {
        let figures = try RecordReader.figures(schema: schema, now: now, txn: txn)
        return TypeStatistics(
            records: figures.records, payloadBytes: figures.payloadBytes,
            expiredRecords: figures.expired, evictions: core.evictions.count(of: schema.name),
            limits: core.limits.limits(ofType: schema.number))
    }
}

extension TypeStatistics {
    /// The figures of two types added up; the limits are this one's, or `other`'s when this has none.
    func adding(_ other: TypeStatistics) -> TypeStatistics {
        TypeStatistics(
            records: records + other.records, payloadBytes: payloadBytes + other.payloadBytes,
            expiredRecords: expiredRecords + other.expiredRecords, evictions: evictions + other.evictions,
            limits: limits ?? other.limits)
    }
}
