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
    /// writes arrive through the store's change log as soon as they reach the data file (an inotify watch on
    /// Linux), at the latest within about ``LocalStorageConfiguration/externalChangePollInterval``. An expiry is noticed when it is due, with
    /// no write needed. Leaving the loop or cancelling its task ends the stream. The stream keeps the
    /// newest 64 values when its consumer falls behind. With a shared tier, a record this instance does not
    /// hold is read from the server, as ``fetch(_:id:)-(_,String)`` does.
    /// - Throws: (from the stream) `invalidId`, `decodingFailed` and the store's errors.
    public func updates<T: LocalStorable>(of type: T.Type, id: T.ID) -> AsyncThrowingStream<T?, any Error> {
        guard configuration.sharedTier != nil else { return local.updates(of: T.self, id: id) }
        // With a shared tier, each look waits as every local read does until this instance may serve its copies
        // (its catch-up, `maxStaleness`), and a record this instance does not hold is read from the server (never
        // a false nil). The closures hold this `LocalStorage`, whose release stops the tier, while the stream runs.
        return local.updates(
            of: T.self, id: id, settle: { try await self.tiers.settle() },
            missing: { name, schema in
                // The times first: a change between the two reads then shows as a newer time at the next look.
                let key = try RecordWriter.key(for: name)
                guard let metadata = try await self.tiers.metadata(T.self, id: name, key: key, schema: schema),
                    !metadata.isExpired, let value = try await self.tiers.fetch(T.self, id: name, schema: schema)
                else { return nil }
                return ServedRecord(
                    value: value, updatedAt: EpochNanoseconds.nanoseconds(from: metadata.updatedAt),
                    expiresAt: metadata.expiresAt.map(EpochNanoseconds.nanoseconds(from:)) ?? 0)
            })
    }
}

extension LocalRepository {
    /// The value of the record with `id` now, then after each committed change to it by any process (see
    /// ``LocalStorage/updates(of:id:)``).
    public func updates(id: T.ID) -> AsyncThrowingStream<T?, any Error> {
        storage.updates(of: T.self, id: id)
    }
}
