import Synchronization

/// The streams of observation over a store: change streams (`changes(of:)`, with another process's changes
/// read from the store as they arrive through the change log) and live queries (`updates(of:matching:…)`).
extension StoreCore {
    /// Every change committed to records of `T` from now on, in commit order, keeping the newest `capacity`
    /// events for a consumer that falls behind (`logger` hears of it once). `owner` stays alive while the
    /// stream is active.
    func changeStream<T: LocalStorable>(
        of type: T.Type, capacity: Int, logger: (any StorageLogger)?, keepingOpen owner: some AnyObject & Sendable
    ) -> AsyncStream<StorageChange<T>> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: StorageChange<T>.self,
            bufferingPolicy: .bufferingNewest(capacity))
        let name = T.storageName
        let hasWarned = Atomic<Bool>(false)
        let core = self
        // Another process's inserts and updates arrive as ids; the value is read from the store.
        Task {
            do {
                _ = try await core.schema(for: T.self)
            } catch {
                logger?.log(
                    level: .warning, message: "A change stream's type cannot be registered",
                    metadata: ["type": name, "error": "\(error)"])
            }
        }
        let token = core.hub.subscribe(name, readsRecords: true) { changes in
            for change in changes {
                guard let typed = change.typed(as: T.self) ?? core.outsideChange(change, T.self)
                else { continue }
                guard case .dropped = continuation.yield(typed) else { continue }
                if !hasWarned.exchange(true, ordering: .relaxed) {
                    logger?.log(
                        level: .warning, message: "A change stream fell behind; dropping its oldest events",
                        metadata: ["type": name, "buffer": "\(capacity)"])
                }
            }
        }
        // Holding `owner` keeps the store open while the stream is active; ending it breaks the cycle.
        liveQueries.beginObserving()
        continuation.onTermination = { _ in
            withExtendedLifetime(owner) {
                core.hub.unsubscribe(name, token: token)
                core.liveQueries.endObserving()
            }
        }
        return stream
    }

    /// The change another process made, or this one through another Swift type stored under `T`'s name,
    /// typed: its value read from the store now (nil when the record is gone or does not decode; a later change
    /// in the log says what happened to it).
    func outsideChange<T: LocalStorable>(_ change: PublishedChange, _ type: T.Type) -> StorageChange<T>? {
        let (id, inserted): (String, Bool)
        switch change.kind {
        case .externalInserted(let value): (id, inserted) = (value, true)
        case .externalUpdated(let value): (id, inserted) = (value, false)
        case .inserted(let value), .updated(let value):
            // Saved through another Swift type: the record is read as `T` (a summary type, a second module's
            // model), as another process's change is.
            guard let other = value as? any LocalStorable, let name = storageID(of: other) else { return nil }
            if case .inserted = change.kind { (id, inserted) = (name, true) } else { (id, inserted) = (name, false) }
        default: return nil
        }
        // Until the stream's own registration is done, the type's databases are opened in place when `meta`
        // already describes this declaration.
        guard
            let schema = cachedSchema(for: T.self)
                ?? registeredInPlace(T.self, name: T.storageName)
        else {
            logger?.log(
                level: .warning, message: "A change stream missed a change: its type is not registered yet",
                metadata: ["type": T.storageName, "id": id])
            return nil
        }
        let session = DecodeSession(
            counter: decodes, format: .binary, logger: logger,
            currentVersion: schema.version, sealing: schema.sealing, indexing: schema.runtime)
        let key = Array(id.utf8)
        let found: T?
        do {
            found = try key.withUnsafeBytes { key in
                try environment.read { txn in
                    var expired = false
                    return try RecordReader.get(
                        T.self, key: key, id: id, schema: schema, now: clock.wallNanoseconds(), txn: txn,
                        session: session, expired: &expired)
                }
            }
        } catch {
            logger?.log(
                level: .warning, message: "Could not read a record another process changed",
                metadata: ["type": schema.name, "id": id, "error": "\(error)"])
            return nil
        }
        return found.map { inserted ? .inserted($0) : .updated($0) }
    }

    /// The storage id of `value`, or nil (logged) when it has none.
    private func storageID<V: LocalStorable>(of value: V) -> String? {
        do {
            return try StorageKey.string(for: value.id)
        } catch {
            logger?.log(
                level: .warning, message: "A change stream could not read the id of a saved value",
                metadata: ["type": V.storageName, "error": "\(error)"])
            return nil
        }
    }

    /// The soonest expiry after `moment` among the records of `T` (nil when none expires or it cannot be read).
    func nextExpiry<T: LocalStorable>(of type: T.Type, after moment: Int64) -> Int64? {
        guard let schema = cachedSchema(for: T.self) else { return nil }
        do {
            return try environment.read { txn in
                try RecordReader.nextExpiry(schema: schema, after: moment, txn: txn)
            }
        } catch {
            logger?.log(
                level: .warning, message: "A live query cannot read the next expiry",
                metadata: ["type": schema.name, "error": "\(error)"])
            return nil
        }
    }

    /// Runs `query` now and again after each burst of commits to `T` (coalesced by `coalescing`), emitting
    /// changed results; with `filters`, a change whose record meets them neither before nor after does not
    /// rerun it. After each run a timer is armed for the soonest expiry among the type's records. A rerun that finds
    /// the shared tier unavailable awaits `recovering` and runs again (see ``LiveQuery/run(emittingTo:query:nextExpiry:recovering:onRerun:)``).
    func liveQuery<T: LocalStorable>(
        of type: T.Type, matching filters: [StorageIndexFilter], coalescing: Duration, firstDesign: Bool,
        buffering: AsyncThrowingStream<[T], Error>.Continuation.BufferingPolicy,
        recovering: (@Sendable (LocalStorageError) async -> Bool)? = nil,
        _ query: @escaping @Sendable () async throws -> [T]
    ) -> AsyncThrowingStream<[T], Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: [T].self, throwing: Error.self,
            bufferingPolicy: buffering)
        let name = T.storageName
        let core = self
        let live = LiveQuery<T>(
            coalescing: coalescing, clock: core.clock, firstDesign: firstDesign,
            onInvalidate: { [center = core.liveQueries] in center.noteInvalidation() })
        // Subscribe before the first run so that no commit after this call can be missed.
        let token = core.hub.subscribe(name) { changes in live.invalidate(for: changes) }
        core.liveQueries.beginObserving()
        let task = Task {
            if !filters.isEmpty {
                do {
                    live.setPlan(try QueryPlan(filters: filters, sort: nil, schema: try await core.schema(for: T.self)))
                } catch {
                    // The query itself reports the problem when it runs.
                }
            }
            await live.run(
                emittingTo: continuation, query: query,
                nextExpiry: { core.nextExpiry(of: T.self, after: $0) },
                recovering: recovering,
                onRerun: { core.liveQueries.noteRerun() })
        }
        continuation.onTermination = { [core] _ in
            task.cancel()
            live.stop()
            core.hub.unsubscribe(name, token: token)
            core.liveQueries.endObserving()
        }
        return stream
    }
}
