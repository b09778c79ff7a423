// One record's value now and after each change: `updates(of:id:)`.

extension LocalStorage {
    /// The value of the record with `id` now (nil when absent or expired), then after each committed
    /// change to it by any process: nil once it is deleted or expires.
    ///
    /// ```swift
    /// for try await product in storage.updates(of: Product.self, id: "sku_108") {
    ///     print(product?.title ?? "gone")
    /// }
    /// ```
    /// A value is emitted when the record's state differs from the last one emitted (another update time,
    /// or present where it was absent); changes committed together come as one value. Another process's
    /// writes arrive through the store's change log within about
    /// ``LocalStorageConfiguration/externalChangePollInterval``. An expiry is noticed when it is due, with
    /// no write needed. Leaving the loop or cancelling its task ends the stream. The stream keeps the
    /// newest 64 values when its consumer falls behind.
    /// - Throws: (from the stream) `invalidId`, `decodingFailed` and the store's errors.
    public func updates<T: LocalStorable>(of type: T.Type, id: T.ID) -> AsyncThrowingStream<T?, any Error> {
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
                var last: (isPresent: Bool, updatedAt: Int64)?
                while !Task.isCancelled {
                    let look = try await self.look(T.self, id: name, key: key, schema: schema)
                    let state = (isPresent: look.value != nil, updatedAt: look.updatedAt)
                    if last.map({ $0 != state }) ?? true {
                        continuation.yield(look.value)
                        last = state
                    }
                    // An expiring record is looked at again just after it expires; others after an hour at most.
                    let wakeAt =
                        look.expiresAt == 0
                        ? core.clock.wallNanoseconds() &+ 3_600_000_000_000 : look.expiresAt &+ 1_000_000
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

extension LocalRepository {
    /// The value of the record with `id` now, then after each committed change to it by any process (see
    /// ``LocalStorage/updates(of:id:)``).
    public func updates(id: T.ID) -> AsyncThrowingStream<T?, any Error> {
        storage.updates(of: T.self, id: id)
    }
}
