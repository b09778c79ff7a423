/// Loading through the cache: one load per id in this process (``LoadFlights``), across the processes on
/// the store (a lease in the `leases` database, see ``LeaseBook``), and a write wins over a load.
extension LocalStorage {
    /// What one read found for an id: the live record (with its update time), and its lease entry.
    struct LoadLook<T> {
        var value: T?
        var updatedAt: Int64 = 0
        /// When the live record expires (0: never).
        var expiresAt: Int64 = 0
        var entry: LeaseEntry?
    }

    /// The body of ``fetch(_:id:policy:load:)``.
    func loadThrough<T: LocalStorable>(
        _ type: T.Type, id: T.ID, policy: LoadPolicy, load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        let policy = try policy.validated()
        let name = try StorageKey.string(for: id)
        let key = try RecordWriter.key(for: name)
        let schema = try await core.schema(for: T.self)
        if policy.refreshAfter == nil, let value = try await tiers.fetchBeforeLoading(T.self, id: name, schema: schema)
        {
            return value
        }
        let look = try await self.look(T.self, id: name, key: key, schema: schema)
        let now = core.clock.wallNanoseconds()
        if let value = look.value {
            if let refreshAfter = policy.refreshAfter, now &- look.updatedAt >= refreshAfter.nanoseconds {
                refreshInBackground(
                    T.self, id: id, name: name, key: key, schema: schema, policy: policy,
                    updatedAt: look.updatedAt, load: load)
            }
            return value
        }
        if look.entry?.remembersAbsence(at: now) == true { return nil }
        let flight = LoadFlights.Key(type: schema.number, id: key)
        let loaded = try await core.loads.join(flight, id: name, timeout: policy.loadTimeout, clock: core.clock) {
            try await self.loadOnce(
                T.self, id: id, name: name, key: key, schema: schema, policy: policy, refreshing: nil, load: load)
        }
        guard let loaded else { return nil }
        if let value = loaded as? T { return value }
        // Another Swift type with the same storage name loaded it: read it back as this one.
        return try await self.look(T.self, id: name, key: key, schema: schema).value
    }

    /// Starts one background reload of a record served stale (unless one is under way); a failure is
    /// logged and keeps the record.
    private func refreshInBackground<T: LocalStorable>(
        _ type: T.Type, id: T.ID, name: String, key: [UInt8], schema: TypeSchema, policy: LoadPolicy,
        updatedAt: Int64, load: @escaping @Sendable (T.ID) async throws -> T?
    ) {
        let flight = LoadFlights.Key(type: schema.number, id: key)
        let logger = self.logger
        core.loads.startIfIdle(flight, id: name, timeout: policy.loadTimeout, clock: core.clock) {
            do {
                return try await self.loadOnce(
                    T.self, id: id, name: name, key: key, schema: schema, policy: policy, refreshing: updatedAt,
                    load: load)
            } catch {
                let reported = (error as? CallerError)?.underlying ?? error
                logger?.log(
                    level: .warning, message: "A background refresh failed; the record is kept until it expires",
                    metadata: ["type": schema.name, "id": name, "error": "\(reported)"])
                throw error
            }
        }
    }

    /// Reads the live record with `key` and its lease entry from one snapshot.
    func look<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema
    ) async throws -> LoadLook<T> {
        let leases = try leaseBook()
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        var expired = false
        let look = try core.environment.read { txn -> LoadLook<T> in
            var look = LoadLook<T>()
            look.entry = try leases.entry(LeaseBook.key(type: schema.number, id: key), txn: txn)
            guard let bytes = try txn.get(schema.records, key: key) else { return look }
            let view = try RecordDecoding.view(of: bytes, T.self, id: id, fixedPartOnly: true)
            if view.isExpired(at: now) {
                expired = true
                return look
            }
            look.value = try RecordDecoding.decode(T.self, view: view, id: id, session: session)
            look.updatedAt = view.updatedAt
            look.expiresAt = view.expiresAt
            if schema.tracksRecency {
                key.withUnsafeBytes { core.accessNotes.note(type: schema.number, key: $0) }
            }
            return look
        }
        afterRead(session: session, expired: expired ? [key] : [], purge: false, schema: schema)
        return look
    }

    /// Loads the record once across the processes on the store: takes the lease (or waits for the
    /// process holding it, then looks again), runs `load`, and stores its result while the lease holds.
    /// With `refreshing`, the record stored at that update time is reloaded even though it is live.
    private func loadOnce<T: LocalStorable>(
        _ type: T.Type, id: T.ID, name: String, key: [UInt8], schema: TypeSchema, policy: LoadPolicy,
        refreshing: Int64?, load: @escaping @Sendable (T.ID) async throws -> T?
    ) async throws -> T? {
        let waiter = RecordWatch(core: core, typeName: schema.name, id: name)
        defer { waiter.end() }
        let leaseKey = LeaseBook.key(type: schema.number, id: key)
        var awaited: UInt64?
        while true {
            try Task.checkCancellation()
            let look = try await self.look(T.self, id: name, key: key, schema: schema)
            if let value = look.value, refreshing == nil || look.updatedAt != refreshing { return value }
            let now = core.clock.wallNanoseconds()
            if let entry = look.entry {
                if entry.holds(at: now) {
                    awaited = entry.token
                    // The holder's own host can tell sooner that it died: look again every 50 ms.
                    let left = Duration.nanoseconds(entry.deadline &- now)
                    let same = entry.owner.host == ProcessIdentity.current.host
                    await waiter.wait(for: same ? min(left, .milliseconds(50)) : left)
                    continue
                }
                if refreshing == nil, entry.remembersAbsence(at: now) { return nil }
                if entry.kind == .absent, entry.token == awaited { return nil }
            }
            let token = UInt64.random(in: 1...UInt64.max)
            guard
                try await takeLease(
                    leaseKey, token: token, refreshing: refreshing, key: key, schema: schema,
                    timeout: policy.loadTimeout)
            else { continue }
            if let tier = sharedTier {  // One load among the instances too (LocalStorage+SharedLoad.swift).
                return try await loadShared(
                    T.self, id: id, name: name, key: key, leaseKey: leaseKey, token: token, schema: schema,
                    policy: policy, refreshing: refreshing, tier: tier, load: load)
            }
            return try await runLoad(
                T.self, id: id, name: name, key: key, leaseKey: leaseKey, token: token, schema: schema,
                policy: policy, refreshing: refreshing, load: load)
        }
    }
}
