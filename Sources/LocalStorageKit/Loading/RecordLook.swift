/// What one read found for an id: the live record (with its update and expiry times), and its lease
/// entry. A load through the cache and `updates(of:id:)` decide from it what to do next.
struct RecordLook<T> {
    var value: T?
    var updatedAt: Int64 = 0
    /// When the live record expires (0: never).
    var expiresAt: Int64 = 0
    /// The digest of its stored payload (``PayloadDigest``; 0 when not asked for or not read from this store).
    var payloadDigest: UInt64 = 0
    var entry: LeaseEntry?
}

extension LocalRecordStore {
    /// Reads the live record with `key` and its lease entry from one snapshot; with `digesting`, also its payload's
    /// digest (a record's stream tells values by it; a load through the cache has no use for it).
    nonisolated(nonsending) func look<T: LocalStorable>(
        _ type: T.Type, id: String, key: [UInt8], schema: TypeSchema, digesting: Bool = false
    ) async throws -> RecordLook<T> {
        let leases = try leaseBook()
        let now = core.clock.wallNanoseconds()
        let session = makeDecodeSession(for: schema)
        var expired = false
        let look = try core.environment.read { txn -> RecordLook<T> in
            var look = RecordLook<T>()
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
            if digesting { look.payloadDigest = PayloadDigest.of(view.payload) }
            if schema.tracksRecency {
                key.withUnsafeBytes { core.accessNotes.note(type: schema.number, key: $0) }
            }
            return look
        }
        afterRead(session: session, expired: expired ? [key] : [], purge: false, schema: schema)
        return look
    }

    /// The store's lease database (``LeaseBook``).
    func leaseBook() throws(LocalStorageError) -> LeaseBook {
        guard let leases = core.changeLog.leases else {
            throw .storageError(code: -1, message: "the store has no lease database")
        }
        return leases
    }
}
