import Foundation

extension LocalStorage {
    // MARK: - Saving

    /// Saves `value`, replacing any record with its id.
    ///
    /// Re-saving an id keeps its `createdAt`, moves `updatedAt` and takes the new expiration. Concurrent
    /// saves from many tasks are committed together; the call returns when the commit is durable.
    /// - Throws: `invalidId` for an empty or over-long id, `encodingFailed`, `storageFull`.
    nonisolated(nonsending) public func save<T: LocalStorable>(
        _ value: T, expiration: CacheExpiration = .never
    ) async throws {
        try await operation("save") {
            let schema = try await core.schema(for: T.self)
            try await tiers.save(try prepare(value, schema: schema), expiration: expiration, schema: schema)
        }
    }

    /// Saves every value in one transaction: all of them or, on failure, none.
    ///
    /// When the sequence repeats an id, the last value wins.
    public func save<T: LocalStorable, S: Sequence & Sendable>(
        contentsOf values: S, expiration: CacheExpiration = .never
    ) async throws where S.Element == T {
        try await operation("save(contentsOf:)") {
            let schema = try await core.schema(for: T.self)
            var records = try await prepareAll(Array(values), schema: schema)
            guard !records.isEmpty else { return }
            // Applying puts in key order fills pages better and is several times faster; a repeated id
            // keeps its last value.
            RecordWriter.sortByKey(&records)
            try await tiers.save(contentsOf: records, expiration: expiration, schema: schema)
        }
    }

    // MARK: - Reading

    /// The record with `id`, or nil when it is absent or expired.
    ///
    /// - Throws: `decodingFailed` when the stored payload does not decode as `T`; `migrationFailed`.
    nonisolated(nonsending) public func fetch<T: LocalStorable>(_ type: T.Type, id: String) async throws -> T? {
        // A hit of the memory tier is answered here, with no asynchronous call. The tier hands out only a value
        // kept as a `T` (it compares the types), so the opening cannot fail; it goes straight into the result (a
        // `T?` bound here first would cost a runtime metadata lookup a hit).
        if answersFromMemory, let schema = core.cachedSchema(for: T.self),
            let held = tiers.heldValue(T.self, id: id, schema: schema)
        {
            return MemoryTier.unwrap(held, as: T.self)
        }
        return try await operation("fetch") {
            let schema = try await core.schema(for: T.self)
            return try await tiers.fetch(T.self, id: id, schema: schema)
        }
    }

    /// Live records of `T` in `options.sort` order (by id unless told otherwise), paged by limit and offset.
    ///
    /// Complexity: O(offset + limit) entries walked; only returned rows are decoded.
    nonisolated(nonsending) public func fetch<T: LocalStorable>(
        _ type: T.Type, options: FetchOptions = FetchOptions()
    ) async throws -> [T] {
        try await operation("fetch(options:)") {
            let options = try options.validated()
            let schema = try await core.schema(for: T.self)
            let plan = try QueryPlan(filters: [], sort: nil, schema: schema)
            return try await tiers.fetch(T.self, plan: plan, options: options, schema: schema)
        }
    }

    /// The number of live (unexpired) records of `T`: in this store, or with a shared tier on the shared tier, as
    /// `fetch(_:)` and `count(_:matching:)` read there (`count(_:matching:options:)` with `.local` counts the
    /// near cache).
    ///
    /// Complexity: O(expired but unpurged records) locally, O(log n) on the shared tier; decodes nothing.
    nonisolated(nonsending) public func count<T: LocalStorable>(_ type: T.Type) async throws -> Int {
        // With a shared tier the near cache holds what this instance read or wrote, not the type: it counted 0 of
        // 5 records another instance saved while `fetch(_:)` returned them (trial58 D5).
        if sharedTier != nil { return try await count(T.self, matching: []) }
        return try await operation("count") {
            let schema = try await core.schema(for: T.self)
            try await tiers.settle()
            let now = core.clock.wallNanoseconds()
            return try core.environment.read { txn in try RecordReader.count(schema: schema, now: now, txn: txn) }
        }
    }

    /// What the store knows about a record: timestamps, expiry, size, version.
    ///
    /// The one read that still returns an expired record (with `isExpired == true`) until it is purged. It
    /// first waits for the purges and migration write-backs that reads in this process handed the writer
    /// (reads return without waiting for them), so that right after a read with `purgeExpired: true` the
    /// record is gone, and right after a read that migrated a record, `version` is the current one.
    nonisolated(nonsending) public func metadata<T: LocalStorable>(
        _ type: T.Type, id: String
    ) async throws -> StorageMetadata? {
        try await operation("metadata") {
            let schema = try await core.schema(for: T.self)
            let key = try RecordWriter.key(for: id)
            return try await tiers.metadata(T.self, id: id, key: key, schema: schema)
        }
    }

    // MARK: - Deleting

    /// Deletes the record with `id`; deleting a missing id does nothing.
    nonisolated(nonsending) public func delete<T: LocalStorable>(_ type: T.Type, id: String) async throws {
        try await operation("delete") {
            let schema = try await core.schema(for: T.self)
            let key = try RecordWriter.key(for: id)
            try await tiers.delete(id: id, key: key, schema: schema)
        }
    }

    /// Deletes every record of `T` (emits one `.cleared`).
    nonisolated(nonsending) public func deleteAll<T: LocalStorable>(_ type: T.Type) async throws {
        try await operation("deleteAll") {
            let schema = try await core.schema(for: T.self)
            try await tiers.deleteAll(schema: schema)
        }
    }

    /// Deletes every expired record of every type in the store; returns how many.
    ///
    /// Emits `.expired(id)` for each. Works in bounded batches.
    @discardableResult
    nonisolated(nonsending) public func purgeExpired() async throws -> Int {
        try await operation("purgeExpired") {
            let meta = core.meta
            return try await core.writer.performExclusive { writer in
                try RecordWriter.purgeAllExpired(meta: meta, writer: writer)
            }
        }
    }

    // MARK: - Changing one record

    /// Changes a record's time to live without rewriting its value.
    ///
    /// - Throws: `notFound(id:)` when the record is absent or expired.
    nonisolated(nonsending) public func setExpiration<T: LocalStorable>(
        _ type: T.Type, id: String,
        _ expiration: CacheExpiration
    ) async throws {
        try await operation("setExpiration") {
            let schema = try await core.schema(for: T.self)
            let key = try RecordWriter.key(for: id)
            try await tiers.setExpiration(T.self, id: id, key: key, expiration, schema: schema)
        }
    }

    /// Reads, mutates and writes a record in one transaction; returns the new value.
    ///
    /// `mutate` runs on the writer thread, exactly once, in a group commit of such calls only: keep it short.
    /// The record keeps its expiration.
    /// - Throws: `notFound(id:)` when the record is absent or expired; `invalidId` if `mutate` changes the id;
    ///   whatever `mutate` throws, unchanged (nothing is written then).
    @discardableResult
    nonisolated(nonsending) public func update<T: LocalStorable>(
        _ type: T.Type, id: String,
        _ mutate: @escaping @Sendable (inout T) throws -> Void
    ) async throws -> T {
        try await operationPassingCallerErrors("update") {
            let schema = try await core.schema(for: T.self)
            let key = try RecordWriter.key(for: id)
            return try await tiers.update(T.self, id: id, key: key, schema: schema, mutate)
        }
    }
}

extension LocalStorage {
    /// Encodes a value and its index values for the writer, in this store's codec.
    func prepare<T: LocalStorable>(
        _ value: T, schema: TypeSchema, indexValues: IndexValueFunction<T>? = nil
    ) throws -> PreparedRecord {
        try PreparedRecord(encoding: value, schema: schema, format: local.format, indexValues: indexValues)
    }

    /// Fewest records a task of ``prepareAll(_:schema:)`` encodes: below twice that, one task encodes them all.
    static var preparationChunk: Int { 1_024 }

    /// `values` encoded for saving, in their order. A large batch is encoded in chunks by child tasks, one per
    /// processor: encoding is most of a bulk save's work before the writer's, and it needs no order. When
    /// records fail to encode, the error of the first of them in `values` is thrown, as one task would.
    ///
    /// The tasks encode into one buffer, each its own range, and the result takes the records over by moving
    /// them: joining per-task arrays copied every record (a retain of each of its buffers) and then released
    /// the copies, about 5% of a bulk save of 100,000 products.
    func prepareAll<T: LocalStorable>(_ values: [T], schema: TypeSchema) async throws -> [PreparedRecord] {
        let tasks = min(ProcessInfo.processInfo.activeProcessorCount, values.count / Self.preparationChunk)
        guard tasks > 1 else {
            let indexValues = schema.runtime.indexValueComputer(for: T.self)
            return try values.map { try prepare($0, schema: schema, indexValues: indexValues) }
        }
        let chunk = (values.count + tasks - 1) / tasks
        let buffer = PreparationBuffer(capacity: values.count)
        defer { buffer.deallocate() }
        // Each task reports the end of what it initialized and, when a record failed, its error.
        let parts = await withTaskGroup(of: PreparationBuffer.Part.self) { group in
            for start in stride(from: 0, to: values.count, by: chunk) {
                group.addTask {
                    let indexValues = schema.runtime.indexValueComputer(for: T.self)
                    return values.withUnsafeBufferPointer { values in
                        buffer.fill(start..<min(values.count, start + chunk)) { position in
                            try self.prepare(values[position], schema: schema, indexValues: indexValues)
                        }
                    }
                }
            }
            var parts: [PreparationBuffer.Part] = []
            for await part in group { parts.append(part) }
            return parts.sorted { $0.start < $1.start }
        }
        if let failed = parts.first(where: { $0.error != nil }), let error = failed.error {
            for part in parts { buffer.deinitialize(part.start..<part.end) }
            throw error
        }
        return buffer.moveAll(count: values.count)
    }

    /// A decode session for one read (``LocalRecordStore/makeDecodeSession(for:)``).
    func makeDecodeSession(for schema: TypeSchema) -> DecodeSession { local.makeDecodeSession(for: schema) }

    /// Hands the writer what a read leaves (``LocalRecordStore/afterRead(session:expired:purge:schema:)``).
    func afterRead(session: DecodeSession, expired: [[UInt8]], purge: Bool, schema: TypeSchema) {
        local.afterRead(session: session, expired: expired, purge: purge, schema: schema)
    }

    /// Hands the writer the records a read migrated (``LocalRecordStore/writeBack(_:schema:)``).
    func writeBack(_ session: DecodeSession, schema: TypeSchema) { local.writeBack(session, schema: schema) }
}
