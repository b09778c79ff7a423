import Synchronization

/// The streams of observation over a store: change streams (`changes(of:)`, with another process's changes
/// read from the store as they arrive through the change log) and live queries (`updates(of:matching:…)`).
extension StoreCore {
    /// Every change committed to records of `T` from now on, in commit order, keeping the newest `capacity`
    /// events for a consumer that falls behind (`logger` hears of it once), and the newest `backlog` changes its task
    /// has not read yet (at least the change log's retention: another process's batch as large as the log keeps is
    /// queued whole, however much faster it arrives than it decodes; review-106 R1). `owner` stays alive while the
    /// stream is active.
    ///
    /// The subscriber only queues the changes (the writer or the follower of other processes' commits calls it,
    /// and must not wait for decodes); the stream's own task reads the records of other processes' changes, in
    /// order, once the type is registered here: a decode on the delivering thread held this process's writer and
    /// every later delivery (live queries, record watches) back until a large commit was decoded, and a change
    /// that came before the registration was dropped (review-105 F2, F3).
    func changeStream<T: LocalStorable>(
        of type: T.Type, capacity: Int, backlog: Int, logger: (any StorageLogger)?,
        keepingOpen owner: some AnyObject & Sendable
    ) -> AsyncStream<StorageChange<T>> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: StorageChange<T>.self,
            bufferingPolicy: .bufferingNewest(capacity))
        // What the task has not read yet: mostly ids, each read and decoded by the task in turn. While it holds
        // nothing, this process's own changes (which carry their values) go to the stream at once, as they are
        // published, so that the stream's buffer holds them when the save returns.
        let (pending, queue) = AsyncStream.makeStream(
            of: QueuedChange<T>.self, bufferingPolicy: .bufferingNewest(backlog))
        let outstanding = OutstandingCount()
        let name = T.storageName
        let hasWarned = Atomic<Bool>(false)
        let lostReads = Atomic<Int>(liveQueries.lostReadCount)
        let warnOfDrop: @Sendable () -> Void = {
            guard !hasWarned.exchange(true, ordering: .relaxed) else { return }
            logger?.log(
                level: .warning, message: "A change stream fell behind; dropping its oldest events",
                metadata: ["type": name, "buffer": "\(capacity)"])
        }
        let core = self
        let reader = StreamReader()
        // Started once the stream's termination handler is set (below): a reader that ends the stream at once (its
        // type cannot be registered) must find it set, or the stream's observer and subscription stayed for good.
        let startReader = { @Sendable in
            Task {
                // Another process's inserts and updates arrive as ids; the value is read from the store, with the
                // type's databases, so the changes wait here until the type is registered.
                var schema: TypeSchema?
                do {
                    schema = try await core.schema(for: T.self)
                } catch {
                    let error = LocalStorageError.wrapping(error)
                    if case .invalidDeclaration = error {
                        // A declaration the store cannot hold: nothing of the type can be saved or read, so the stream
                        // ends, as a loop over it expects, instead of waiting for ever (trial104 D1).
                        logger?.log(
                            level: .error, message: "A change stream's type cannot be registered; the stream ends",
                            metadata: ["type": name, "error": "\(error)"])
                        continuation.finish()
                        return
                    }
                    // Another failure (a full store, say): the stream waits; other processes' changes of the type
                    // cannot be read here until it is registered.
                    logger?.log(
                        level: .warning, message: "A change stream's type cannot be registered",
                        metadata: ["type": name, "error": "\(error)"])
                }
                var read = 0
                for await queued in pending {
                    // A stream that ended reads nothing it had queued (the queue hands its buffer to a cancelled reader).
                    if Task.isCancelled { return }
                    let change: StorageChange<T>?
                    switch queued {
                    case .typed(let typed): change = typed
                    case .outside(let outside): change = core.outsideChange(outside, T.self, schema: schema)
                    }
                    if let typed = change, case .dropped = continuation.yield(typed) { warnOfDrop() }
                    // After the yield: a change published once the count is 0 comes after this one.
                    outstanding.remove()
                    read += 1
                    // A long run of reads and decodes (unsealing, migrations) leaves the other tasks of the pool their turn.
                    if read % 16 == 0 { await Task.yield() }
                }
            }
        }
        let token = core.hub.subscribe(name, readsRecords: true) { changes in
            // Entries of other processes' changes trimmed before they were read (a batch larger than the log's
            // retention): the follower cannot name those records, and says so with an empty list (trial104: nothing
            // was logged). An empty list also follows a failed read of the log, which is read again: no warning then.
            if changes.isEmpty {
                let lost = core.liveQueries.lostReadCount
                if lost > lostReads.exchange(lost, ordering: .relaxed) {
                    logger?.log(
                        level: .warning,
                        message: "A change stream missed other processes' changes the change log no longer names "
                            + "(a batch larger than changeLogRetention?); read the records again to catch up",
                        metadata: ["type": name])
                }
            }
            for change in changes {
                let queued: QueuedChange<T>
                if let typed = change.typed(as: T.self) {
                    queued = .typed(typed)
                } else if change.isOwnValue, let schema = core.cachedSchema(for: T.self) {
                    // This process's write through another Swift type stored under `T`'s name: read as `T` now, in its
                    // commit's state, as the writer delivers it (a later read could find the next commit's).
                    guard let typed = core.outsideChange(change, T.self, schema: schema) else { continue }
                    queued = .typed(typed)
                } else {
                    queued = .outside(change)
                }
                if case .typed(let typed) = queued, outstanding.isZero {
                    if case .dropped = continuation.yield(typed) { warnOfDrop() }
                    continue
                }
                outstanding.add()
                switch queue.yield(queued) {
                case .enqueued: break
                case .dropped:
                    outstanding.remove()  // the oldest, which the task will never read
                    warnOfDrop()
                case .terminated: outstanding.remove()
                @unknown default: break
                }
            }
        }
        // Holding `owner` keeps the store open while the stream is active; ending it breaks the cycle.
        liveQueries.beginObserving()
        continuation.onTermination = { _ in
            withExtendedLifetime(owner) {
                core.hub.unsubscribe(name, token: token)
                core.liveQueries.endObserving()
                queue.finish()
                reader.cancel()
            }
        }
        reader.start(startReader)
        return stream
    }

    /// The change another process made, or this one through another Swift type stored under `T`'s name,
    /// typed: its value read from the store now (nil when the record is gone or does not decode; a later change
    /// in the log says what happened to it).
    func outsideChange<T: LocalStorable>(
        _ change: PublishedChange, _ type: T.Type, schema registered: TypeSchema?
    ) -> StorageChange<T>? {
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
        // A stream whose registration failed still reads with the databases `meta` describes, when it can.
        guard
            let schema = registered ?? cachedSchema(for: T.self)
                ?? registeredInPlace(T.self, name: T.storageName)
        else {
            logger?.log(
                level: .warning, message: "A change stream missed a change: its type could not be registered",
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

/// The task that reads a change stream's queue, cancelled when the stream ends (also before it started: it then does
/// not start).
private final class StreamReader: Sendable {
    private let task = Mutex<(task: Task<Void, Never>?, isCancelled: Bool)>((nil, false))

    func start(_ make: () -> Task<Void, Never>) {
        task.withLock { state in
            guard !state.isCancelled else { return }
            state.task = make()
        }
    }

    func cancel() {
        task.withLock { state in
            state.isCancelled = true
            return state.task
        }?.cancel()
    }
}

/// How many changes a stream's task has queued and not delivered yet.
private final class OutstandingCount: Sendable {
    private let count = Atomic<Int>(0)

    var isZero: Bool { count.load(ordering: .sequentiallyConsistent) == 0 }
    func add() { count.add(1, ordering: .sequentiallyConsistent) }
    func remove() { count.subtract(1, ordering: .sequentiallyConsistent) }
}

/// A change a stream has queued for its task: ready to deliver, or to be read from the store first (another process's,
/// or one of this process whose type was not registered here yet).
private enum QueuedChange<T: Sendable>: Sendable {
    case typed(StorageChange<T>)
    case outside(PublishedChange)
}

extension PublishedChange {
    /// Whether the change carries the value this process wrote (an insert or an update, of any Swift type).
    fileprivate var isOwnValue: Bool {
        switch kind {
        case .inserted, .updated: true
        default: false
        }
    }
}
