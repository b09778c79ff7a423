extension LocalStorage {
    /// The memory tier `configuration` asks for, or nil.
    ///
    /// - Throws: `openFailed` when a bound is below 1.
    static func makeMemoryTier(_ configuration: LocalStorageConfiguration, core: StoreCore) throws -> MemoryTier? {
        guard let settings = configuration.memoryCache else { return nil }
        guard settings.maxRecords >= 1, settings.maxBytes >= 1 else {
            throw LocalStorageError.openFailed(
                path: core.directory.path,
                reason: "memoryCache: maxRecords and maxBytes must be at least 1 (got \(settings.maxRecords) "
                    + "and \(settings.maxBytes))")
        }
        return MemoryTier(
            maxRecords: settings.maxRecords, maxBytes: settings.maxBytes,
            environment: core.environment, changeLog: core.changeLog, logger: configuration.logger)
    }

    /// ``fetch(_:id:)`` through the memory tier: a current, unexpired value held for the id is returned as it
    /// is (no read, no decode); otherwise the record is read and decoded, and the tier keeps it.
    func fetch<T: LocalStorable>(
        _ type: T.Type, id: String, schema: TypeSchema,
        through tier: MemoryTier
    ) throws -> T? {
        let now = core.clock.wallNanoseconds()
        let tierKey = MemoryTier.Key(type: schema.number, id: id)
        var utf8 = id
        if let held = tier.value(T.self, for: tierKey, now: now) {
            if schema.tracksRecency {
                utf8.withUTF8 { core.accessNotes.note(type: schema.number, key: UnsafeRawBufferPointer($0)) }
            }
            return held
        }
        let session = makeDecodeSession(for: schema)
        var expired = false
        let value: T? = try utf8.withUTF8 { key in
            try RecordWriter.validate(keyLength: key.count)
            return try core.environment.read { txn in
                let found = try RecordReader.getForMemoryTier(
                    T.self, key: UnsafeRawBufferPointer(key), id: id,
                    schema: schema, now: now, txn: txn, session: session)
                expired = found.expired
                if let value = found.value {
                    tier.keep(value, for: tierKey, expiresAt: found.expiresAt, bytes: found.payloadBytes, readIn: txn)
                    if schema.tracksRecency {
                        core.accessNotes.note(type: schema.number, key: UnsafeRawBufferPointer(key))
                    }
                }
                return found.value
            }
        }
        followUp(session: session, expired: expired ? [Array(id.utf8)] : [], purge: false, schema: schema)
        return value
    }
}
