/// One record's value now and after each change (`updates(of:id:)`): a ``RecordWatch`` wakes the loop at
/// each change that may concern the id, and at its expiry; the loop reads the record again and emits it
/// when its state differs from the last one emitted.
extension LocalRecordStore {
    /// The value of the record `id` now, then after each committed change to it by any process. With
    /// `missing` (a shared tier's read), a record this store does not hold is read through it, so that the
    /// stream never reports a false nil for a record the tier holds; `settle` (the tier's gate) runs before
    /// each look at this store.
    func updates<T: LocalStorable>(
        of type: T.Type, id: T.ID, settle: (@Sendable () async throws -> Void)? = nil,
        missing: (@Sendable (_ id: String, _ schema: TypeSchema) async throws -> ServedRecord<T>?)? = nil
    ) -> AsyncThrowingStream<T?, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: T?.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(64))
        let task = Task { [self] in
            do {
                let name = try StorageKey.string(for: id)
                let key = try RecordWriter.key(for: name)
                let schema = try await core.schema(for: T.self)
                // Listening starts before the first read, so that no change after it is missed.
                let watch = RecordWatch(core: core, typeName: schema.name, id: name)
                defer { watch.end() }
                // What tells a new value: the update time, and the stored payload's digest (an import that keeps
                // the update time changes the value: trial93 #1).
                var last: (isPresent: Bool, updatedAt: Int64, payload: UInt64)?
                while !Task.isCancelled {
                    try await settle?()
                    var current = try await look(T.self, id: name, key: key, schema: schema, digesting: true)
                    var value = current.value
                    if value == nil, let missing, let found = try await missing(name, schema) {
                        // The tier's read keeps the record here too: its state is read back from this store. One
                        // this store cannot keep (over its byte limit) goes by the server's times: without them each
                        // later version looked like the first one served, and the stream missed it (trial82 #3).
                        value = found.value
                        let kept = try await look(T.self, id: name, key: key, schema: schema, digesting: true)
                        if kept.value != nil {
                            current = kept
                        } else {
                            current.updatedAt = found.updatedAt
                            current.expiresAt = found.expiresAt
                            current.payloadDigest = 0
                        }
                    }
                    let state = (
                        isPresent: value != nil, updatedAt: value == nil ? 0 : current.updatedAt,
                        payload: value == nil ? 0 : current.payloadDigest
                    )
                    if last.map({ $0 != state }) ?? true {
                        continuation.yield(value)
                        last = state
                    }
                    // An expiring record is looked at again just after it expires; others after an hour at most.
                    let wakeAt =
                        current.expiresAt == 0
                        ? core.clock.wallNanoseconds() &+ 3_600_000_000_000 : current.expiresAt &+ 1_000_000
                    await watch.wait(untilWallNanoseconds: wakeAt)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: LocalStorageError.wrapping(error))
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// A record read through a tier above this store (``LocalRecordStore/updates(of:id:settle:missing:)``): its value
/// and its update and expiry times (nanoseconds since 1970; 0 for no expiry).
struct ServedRecord<T: LocalStorable>: Sendable {
    let value: T
    let updatedAt: Int64
    let expiresAt: Int64
}
