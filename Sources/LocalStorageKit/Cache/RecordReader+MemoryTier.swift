extension RecordReader {
    /// ``get(_:key:id:schema:now:txn:session:)`` for a fetch through the memory tier: also what the tier
    /// keeps with the value, its expiry (ns since 1970, 0 = never) and its stored payload's size.
    static func getForMemoryTier<T: LocalStorable>(
        _ type: T.Type, key: UnsafeRawBufferPointer, id: String, schema: TypeSchema, now: Int64, txn: Transaction,
        session: DecodeSession
    ) throws -> (value: T?, expired: Bool, expiresAt: Int64, payloadBytes: Int) {
        guard let bytes = try txn.get(schema.records, key: key) else { return (nil, false, 0, 0) }
        let view = try RecordDecoding.view(of: bytes, T.self, id: id, fixedPartOnly: true)
        if view.isExpired(at: now) { return (nil, true, view.expiresAt, view.payload.count) }
        return (
            try RecordDecoding.decode(T.self, view: view, id: id, session: session), false, view.expiresAt,
            view.payload.count
        )
    }
}
