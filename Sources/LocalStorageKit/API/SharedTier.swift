import Foundation
import Synchronization

/// A store's shared tier: the Redis/Valkey server that is the source of truth for every instance on a
/// namespace, with this store as the instance's near cache (docs/DESIGN.md, "Sharing a cache between hosts").
///
/// - Writes go to the server first (one script: record, index members, expiry, change notice), then into
///   the local store with the very bytes the server holds.
/// - Every change gets a sequence number. The applier follows the server's change channel in sequence order
///   and applies each change to the local store (change streams and live queries see it like a local write).
/// - **The resynchronisation rule.** While the subscription is down, local records are served as they were
///   (nobody can write through an unreachable server) and local misses throw. Once it is back, no read is
///   served until the instance has caught up: it reads the server's sequence, re-reads from the server every
///   record the change log names after its own position, and applies them. When the log no longer reaches
///   back that far (or the server lost its data, or this instance never was in sync: a fresh start), it drops
///   every local record instead and starts from the server's position.
final class SharedTier: Sendable {
    enum Phase: Sendable, Equatable {
        /// Never in sync yet (the first connection is being made).
        case connecting
        /// Subscribed; catching up before serving.
        case syncing
        /// Following the change channel.
        case live
        /// The subscription is lost; local records serve, local misses throw.
        case down
    }

    struct State {
        var phase: Phase = .connecting
        /// The last sequence the local store reflects (set inside the writer, in commit order).
        var appliedSeq: Int64?
        /// The last sequence the applier took from the channel or a catch-up (ahead of `appliedSeq` while its
        /// work waits in the writer queue).
        var receivedSeq: Int64?
        var lastError: LocalStorageError?
        var catchUps = 0
        var drops = 0
        var schemasByName: [String: TypeSchema] = [:]
    }

    let settings: SharedTierConfiguration
    let endpoint: RESPEndpoint
    let layout: SharedTierLayout
    let connection: RESPConnection
    /// This instance's random id: it marks the notices it writes.
    let sender: [UInt8]
    let core: StoreCore
    let logger: (any StorageLogger)?
    let state = Mutex(State())
    private let scriptHashes = Mutex<[String: [UInt8]]>([:])
    private let events: AsyncStream<SubscriberEvent>.Continuation
    private let subscriber: RESPSubscriber
    private let applier = Mutex<Task<Void, Never>?>(nil)

    /// Starts connecting (in the background) to the server `settings` names.
    ///
    /// - Throws: `sharedTierUnavailable` for a URL or namespace that cannot work (see
    ///   ``SharedTierConfiguration``); nothing is connected yet when it returns.
    init(settings: SharedTierConfiguration, core: StoreCore, logger: (any StorageLogger)?) throws(LocalStorageError) {
        let endpoint = try settings.endpoint()
        self.settings = settings
        self.endpoint = endpoint
        self.core = core
        self.logger = logger
        layout = SharedTierLayout(namespace: settings.namespace)
        sender = (0..<16).map { _ in UInt8.random(in: 0...255) }
        connection = RESPConnection(
            endpoint: endpoint, reconnectDelay: settings.reconnectDelay,
            maxReconnectDelay: settings.maxReconnectDelay,
            name: "LocalStorageKit.sharedTier.commands")
        let (stream, continuation) = AsyncStream<SubscriberEvent>.makeStream()
        events = continuation
        subscriber = RESPSubscriber(
            endpoint: endpoint, channel: layout.channel, reconnectDelay: settings.reconnectDelay,
            maxReconnectDelay: settings.maxReconnectDelay,
            name: "LocalStorageKit.sharedTier.subscriber",
            report: { continuation.yield($0) })
        logger?.log(
            level: .info, message: "Connecting to the shared tier",
            metadata: ["server": settings.redactedURL, "namespace": settings.namespace])
        let task = Task { [self] in await follow(stream) }
        applier.withLock { $0 = task }
    }

    /// Stops following the server and closes both connections. Called when the store closes.
    func stop() {
        subscriber.stop()
        events.finish()
        applier.withLock { $0?.cancel() }
        connection.stop()
    }

    var phase: Phase { state.withLock { $0.phase } }

    // MARK: - Gates

    /// Waits (up to the connect and read timeouts) while the instance is connecting or catching up, so that no
    /// read is served from a local copy that may have changed while it was away.
    nonisolated(nonsending) func awaitSettled() async {
        guard state.withLock({ $0.phase == .connecting || $0.phase == .syncing }) else { return }
        let deadline = ContinuousClock.now + settings.connectTimeout + settings.readTimeout
        while ContinuousClock.now < deadline {
            do {
                try await Task.sleep(for: .milliseconds(1))
            } catch {
                return
            }
            if !state.withLock({ $0.phase == .connecting || $0.phase == .syncing }) { return }
        }
    }

    /// Whether this instance's own change `sequence` may be written locally now: not while a catch-up runs
    /// (it brings the change), and not when the local store already reflects it or a later change.
    func admitsOwn(_ sequence: Int64) -> Bool {
        state.withLock { state in
            state.phase != .syncing && (state.appliedSeq ?? Int64.min) < sequence
        }
    }

    /// After an own write that was not admitted (a catch-up was running), waits until the local store holds it
    /// or something later (bounded by the read timeout).
    func awaitApplied(_ sequence: Int64) async {
        let deadline = ContinuousClock.now + settings.readTimeout
        while ContinuousClock.now < deadline {
            if state.withLock({ ($0.appliedSeq ?? Int64.min) >= sequence || $0.phase == .down }) { return }
            do {
                try await Task.sleep(for: .milliseconds(1))
            } catch {
                return
            }
        }
    }

    // MARK: - Commands and scripts

    /// Runs one of ``SharedTierScripts`` with `EVALSHA` (loading it first, and again after the server lost it).
    /// Returns the script's reply, an error reply included.
    func run(_ name: String, _ source: String, _ arguments: [[UInt8]]) async throws(LocalStorageError) -> RESPValue {
        let head: [[UInt8]] = [
            layout.prefix, RecordWriter.timeKey(Clock.now()),
            Array(String(settings.changeLogRetention).utf8),
        ]
        for attempt in 0..<2 {
            let hash: [UInt8]
            if let known = scriptHashes.withLock({ $0[name] }), attempt == 0 {
                hash = known
            } else {
                let loaded = try await connection.call([Array("SCRIPT".utf8), Array("LOAD".utf8), Array(source.utf8)])
                guard let bytes = loaded.bytes else {
                    throw .sharedTierUnavailable("SCRIPT LOAD at \(endpoint.label) replied \(loaded.summary)")
                }
                hash = bytes
                scriptHashes.withLock { $0[name] = bytes }
            }
            let reply = try await connection.send([[Array("EVALSHA".utf8), hash, Array("0".utf8)] + head + arguments])[
                0]
            if case .error(let message) = reply, message.hasPrefix("NOSCRIPT") { continue }
            return reply
        }
        throw .sharedTierUnavailable("the \(name) script at \(endpoint.label) could not be loaded")
    }

    /// Fails with a message naming the script for an error reply.
    func expectSuccess(_ reply: RESPValue, script: String) throws(LocalStorageError) -> RESPValue {
        if case .error(let message) = reply {
            throw .sharedTierUnavailable("the \(script) script at \(endpoint.label) failed: \(message)")
        }
        return reply
    }

    /// A change notice: kind, database, sender, type and id (the scripts put the sequence in front and, for a
    /// put, the record behind).
    func notice(_ kind: UInt8, type: String, id: String) -> [UInt8] {
        var out: [UInt8] = [kind]
        out.appendBigEndian(UInt32(truncatingIfNeeded: endpoint.database))
        out += sender
        let typeBytes = Array(type.utf8)
        let idBytes = Array(id.utf8)
        out.appendBigEndian(UInt16(truncatingIfNeeded: typeBytes.count))
        out += typeBytes
        out.appendBigEndian(UInt16(truncatingIfNeeded: idBytes.count))
        out += idBytes
        return out
    }

    // MARK: - Writing

    /// The (set, member) pairs a record occupies on the server.
    func members(of header: RecordHeader, id: [UInt8], schema: TypeSchema, type: [UInt8]) -> [[UInt8]] {
        var pairs: [[UInt8]] = []
        for index in schema.indexes {
            pairs.append(layout.index(type: type, name: index.name))
            pairs.append(RecordWriter.indexKey(of: header, for: index) + id)
        }
        pairs.append(layout.ids(type: type))
        pairs.append(id)
        pairs.append(layout.updated(type: type))
        pairs.append(RecordWriter.timeKey(header.updatedAt) + id)
        if header.expiresAt != 0 {
            pairs.append(layout.expiry)
            pairs.append(RecordWriter.timeKey(header.expiresAt) + type + [UInt8(ascii: ":")] + id)
        }
        return pairs
    }

    /// One record as the put script takes it.
    struct Put {
        let record: PreparedRecord
        var bytes: [UInt8]
        let header: RecordHeader
        /// The expected old updatedAt ‖ expiresAt, `-` for "must exist", empty for no check.
        let expect: [UInt8]
    }

    /// Builds the put of `record` at `now` with `expiresAt`.
    func put(
        _ record: PreparedRecord, expiresAt: Int64, now: Int64, schema: TypeSchema,
        createdAt: Int64? = nil, expect: [UInt8] = []
    ) throws(LocalStorageError) -> Put {
        let header = RecordHeader(
            format: record.format, version: record.version, createdAt: createdAt ?? now,
            updatedAt: now, expiresAt: expiresAt, signature: schema.signature,
            indexValues: record.indexValues)
        return Put(
            record: record, bytes: try header.serialized(payload: record.payload), header: header,
            expect: expect)
    }

    /// Writes records on the server in one script; returns each one's final bytes and sequence.
    ///
    /// - Throws: `sharedTierUnavailable` (nothing was written), `decodingFailed` when the server holds a
    ///   record at a newer version, or `SharedTierConflict` when an expected record changed.
    func write(_ puts: [Put], schema: TypeSchema, now: Int64) async throws -> [(bytes: [UInt8], sequence: Int64)] {
        let type = SharedTierLayout.escape(schema.name)
        var arguments: [[UInt8]] = []
        arguments.reserveCapacity(puts.count * 8)
        for put in puts {
            let id = put.record.key
            var ttl: Int64 = 0
            if put.header.expiresAt != 0 {
                let left = put.header.expiresAt - now
                ttl = max(1, left / 1_000_000 + (left % 1_000_000 == 0 ? 0 : 1))
            }
            arguments += [
                type, id, put.bytes, Array(String(ttl).utf8),
                SharedTierLayout.frame(members(of: put.header, id: id, schema: schema, type: type)),
                notice(UInt8(ascii: "P"), type: schema.name, id: put.record.id),
                Array(String(put.record.version).utf8), put.expect,
            ]
        }
        let reply = try await run("put", SharedTierScripts.put, arguments)
        if case .error(let message) = reply {
            if message.hasPrefix("NEWER ") {
                throw LocalStorageError.decodingFailed(
                    reason: "\(schema.name) \(message.dropFirst(6)) on the shared "
                        + "tier, newer than this app's version (written by a newer version); it was not overwritten")
            }
            if message.hasPrefix("CONFLICT ") { throw SharedTierConflict(message: String(message.dropFirst(9))) }
            throw LocalStorageError.sharedTierUnavailable("the put script at \(endpoint.label) failed: \(message)")
        }
        guard let values = reply.elements, values.count == puts.count * 2 else {
            throw LocalStorageError.sharedTierUnavailable(
                "the put script at \(endpoint.label) replied \(reply.summary)")
        }
        var out: [(bytes: [UInt8], sequence: Int64)] = []
        for (position, put) in puts.enumerated() {
            var bytes = put.bytes
            if let created = values[position * 2].bytes, created.count == 8 {
                bytes.replaceSubrange(8..<16, with: created)
            }
            guard let sequence = values[position * 2 + 1].int else {
                throw LocalStorageError.sharedTierUnavailable("the put script replied \(reply.summary)")
            }
            out.append((bytes, sequence))
        }
        return out
    }

    /// Commits this instance's own written records locally (unless the applier already holds them or
    /// something later), then waits for any not admitted.
    func commitOwn(
        _ written: [(bytes: [UInt8], sequence: Int64)], records: [PreparedRecord],
        schema: TypeSchema
    ) async throws {
        let pending = Mutex<[Int64]>([])
        try await core.writer.perform { [self] context in
            for (position, item) in written.enumerated() {
                if admitsOwn(item.sequence) {
                    try RecordWriter.putReplica(
                        item.bytes, key: records[position].key, value: records[position].value,
                        schema: schema, context: context)
                } else {
                    pending.withLock { $0.append(item.sequence) }
                }
            }
        }
        if let last = pending.withLock({ $0.max() }) { await awaitApplied(last) }
    }

    /// Deletes records on the server; returns the sequences.
    func delete(ids: [String], schema: TypeSchema) async throws(LocalStorageError) -> [Int64] {
        let type = SharedTierLayout.escape(schema.name)
        var arguments: [[UInt8]] = []
        for id in ids { arguments += [type, Array(id.utf8), notice(UInt8(ascii: "D"), type: schema.name, id: id)] }
        let reply = try expectSuccess(try await run("delete", SharedTierScripts.delete, arguments), script: "delete")
        guard let values = reply.elements?.compactMap(\.int), values.count == ids.count else {
            throw .sharedTierUnavailable("the delete script at \(endpoint.label) replied \(reply.summary)")
        }
        return values
    }

    /// Deletes every record of a type on the server; returns the sequence.
    func clear(schema: TypeSchema) async throws(LocalStorageError) -> Int64 {
        let type = SharedTierLayout.escape(schema.name)
        var arguments: [[UInt8]] = [type, notice(UInt8(ascii: "C"), type: schema.name, id: "")]
        for index in schema.allIndexes { arguments.append(layout.index(type: type, name: index.name)) }
        let reply = try expectSuccess(try await run("clear", SharedTierScripts.clear, arguments), script: "clear")
        guard let sequence = reply.int else {
            throw .sharedTierUnavailable("the clear script at \(endpoint.label) replied \(reply.summary)")
        }
        return sequence
    }

    /// The record `id` of a type as the server holds it (nil when absent).
    func record(type: String, id: [UInt8]) async throws(LocalStorageError) -> [UInt8]? {
        let reply = try await connection.call([
            Array("GET".utf8), layout.record(type: SharedTierLayout.escape(type), id: id),
        ])
        if case .null = reply { return nil }
        guard let bytes = reply.bytes else {
            throw .sharedTierUnavailable("GET at \(endpoint.label) replied \(reply.summary)")
        }
        return bytes
    }

    /// Records by key, in order (nil where absent), in pipelined `MGET`s of at most 512 keys.
    func records(keys: [[UInt8]]) async throws(LocalStorageError) -> [[UInt8]?] {
        var out: [[UInt8]?] = []
        out.reserveCapacity(keys.count)
        var start = 0
        var commands: [[[UInt8]]] = []
        while start < keys.count {
            let end = min(keys.count, start + 512)
            commands.append([Array("MGET".utf8)] + keys[start..<end])
            start = end
        }
        guard !commands.isEmpty else { return [] }
        for reply in try await connection.send(commands) {
            guard let values = reply.elements else {
                throw .sharedTierUnavailable("MGET at \(endpoint.label) replied \(reply.summary)")
            }
            for value in values {
                if case .null = value { out.append(nil) } else { out.append(value.bytes) }
            }
        }
        return out
    }

    // MARK: - Following the server

    /// A change notice as it arrives: `seq notice [record]`.
    struct Notice {
        let sequence: Int64
        let kind: UInt8
        let database: UInt32
        let sender: [UInt8]
        let type: String
        let id: String
        let record: [UInt8]

        init?(_ bytes: [UInt8]) {
            guard let space = bytes.firstIndex(of: UInt8(ascii: " ")),
                let sequence = Int64(String(decoding: bytes[..<space], as: UTF8.self))
            else { return nil }
            var offset = space + 1
            func take(_ count: Int) -> ArraySlice<UInt8>? {
                guard count >= 0, offset + count <= bytes.count else { return nil }
                defer { offset += count }
                return bytes[offset..<(offset + count)]
            }
            func number(_ count: Int) -> Int? {
                take(count).map { $0.reduce(0) { $0 << 8 | Int($1) } }
            }
            guard let kind = take(1)?.first, let database = number(4), let sender = take(16),
                let typeLength = number(2), let type = take(typeLength), let idLength = number(2),
                let id = take(idLength)
            else { return nil }
            self.sequence = sequence
            self.kind = kind
            self.database = UInt32(truncatingIfNeeded: database)
            self.sender = Array(sender)
            self.type = String(decoding: type, as: UTF8.self)
            self.id = String(decoding: id, as: UTF8.self)
            record = Array(bytes[offset...])
        }
    }

    private func follow(_ stream: AsyncStream<SubscriberEvent>) async {
        for await event in stream {
            switch event {
            case .subscribed:
                await catchUpUntilDone()
            case .message(let bytes):
                await handle(bytes)
            case .disconnected(let error):
                let wasUp = state.withLock { state -> Bool in
                    let wasUp = state.phase != .down
                    state.phase = .down
                    state.lastError = error
                    return wasUp
                }
                if wasUp {
                    logger?.log(
                        level: .warning, message: "Lost the shared tier; serving local records until it is back",
                        metadata: ["server": settings.redactedURL, "error": "\(error)"])
                }
            }
        }
    }

    private func handle(_ bytes: [UInt8]) async {
        guard let notice = Notice(bytes), notice.database == UInt32(truncatingIfNeeded: endpoint.database) else {
            return
        }
        let position = state.withLock { $0.receivedSeq }
        guard let position, notice.sequence > position else { return }
        if notice.sequence > position + 1 {
            // A change went by unseen: catch up from the log, which also brings this one.
            await catchUpUntilDone()
            return
        }
        state.withLock { $0.receivedSeq = notice.sequence }
        let change = LocalChange(
            kind: notice.kind, type: notice.type, id: notice.id,
            record: notice.record.isEmpty ? nil : notice.record)
        hand([change], through: notice.sequence)
    }

    /// One change to apply to the local store.
    struct LocalChange: Sendable {
        let kind: UInt8
        let type: String
        let id: String
        /// The record's bytes for a put; nil for a delete (or a record that is gone).
        let record: [UInt8]?
    }

    /// Queues changes for the writer without waiting; `sequence` becomes the applied position once they are in.
    private func hand(_ changes: [LocalChange], through sequence: Int64) {
        let logger = self.logger
        core.writer.hand(
            { [self] context in
                for change in changes { try apply(change, context: context) }
                state.withLock { $0.appliedSeq = max($0.appliedSeq ?? Int64.min, sequence) }
            },
            finish: { [self] error in
                guard let error else { return }
                state.withLock { $0.appliedSeq = max($0.appliedSeq ?? Int64.min, sequence) }
                logger?.log(
                    level: .error, message: "Could not apply a change from the shared tier",
                    metadata: ["error": "\(LocalStorageError.wrapping(error))"])
            })
    }

    /// Applies one change inside the writer's transaction.
    private func apply(_ change: LocalChange, context: Writer.Context) throws {
        guard let schema = try localSchema(named: change.type, context: context) else { return }
        switch change.kind {
        case UInt8(ascii: "C"):
            if try context.txn.entryCount(schema.records) > 0 {
                try RecordWriter.clear(schema: schema, context: context)
            }
        case UInt8(ascii: "P"), UInt8(ascii: "D"):
            let key = Array(change.id.utf8)
            guard !key.isEmpty, key.count <= 511 else { return }
            if let record = change.record {
                do {
                    _ = try record.withUnsafeBytes { buffer throws(LocalStorageError) in try RecordView(buffer) }
                } catch {
                    // Not a record (written by something else under our key): drop the local copy, so that a
                    // read goes to the server and reports it.
                    logger?.log(
                        level: .error, message: "The shared tier holds a damaged record; dropped the local copy",
                        metadata: ["type": change.type, "id": change.id, "error": "\(error)"])
                    try RecordWriter.delete(id: change.id, key: key, schema: schema, context: context)
                    return
                }
                try RecordWriter.putReplica(record, key: key, value: nil, schema: schema, context: context)
            } else {
                try RecordWriter.delete(id: change.id, key: key, schema: schema, context: context)
            }
        default:
            return
        }
    }

    /// The open schema of a stored type named `name`: this process's own, or opened from `meta`; nil when the
    /// local store has never held the type (then it has no copy to change).
    private func localSchema(named name: String, context: Writer.Context) throws -> TypeSchema? {
        if let own = core.schemas.withLock({ $0.ready.values.first { $0.name == name } }) { return own }
        if let opened = state.withLock({ $0.schemasByName[name] }) { return opened }
        guard let info = try TypeRegistry.info(named: name, meta: core.meta, txn: context.txn) else { return nil }
        let schema = try StoreCore.schema(for: info, in: context.txn)
        // Handles opened in a transaction are valid once it commits.
        context.onCommit { [self] in state.withLock { $0.schemasByName[name] = schema } }
        return schema
    }

    private func catchUpUntilDone() async {
        var delay = settings.reconnectDelay
        while !Task.isCancelled {
            do {
                try await catchUp()
                return
            } catch {
                state.withLock { state in
                    state.phase = .down
                    state.lastError = LocalStorageError.wrapping(error)
                }
                logger?.log(
                    level: .warning, message: "Could not catch up with the shared tier; retrying",
                    metadata: ["server": settings.redactedURL, "error": "\(LocalStorageError.wrapping(error))"])
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                return
            }
            delay = min(delay * 2, settings.maxReconnectDelay)
        }
    }

    /// Brings the local store up to the server's sequence (see the rule in the type's documentation).
    private func catchUp() async throws {
        let previous = state.withLock { state -> Int64? in
            state.phase = .syncing
            return state.receivedSeq
        }
        let serverReply = try await connection.call([Array("GET".utf8), layout.sequence])
        let server: Int64
        if case .null = serverReply {
            server = 0
        } else {
            guard let value = serverReply.int else {
                throw LocalStorageError.sharedTierUnavailable(
                    "GET \(String(decoding: layout.sequence, as: UTF8.self)) "
                        + "replied \(serverReply.summary)")
            }
            server = value
        }
        var changes: [LocalChange] = []
        var drop = false
        if let previous, server == previous {
            // Nothing changed while away.
        } else if let previous, server > previous {
            let reply = try await connection.call([
                Array("ZRANGEBYSCORE".utf8), layout.log, Array("(\(previous)".utf8),
                Array("\(server)".utf8),
            ])
            let entries = (reply.elements ?? []).compactMap { $0.bytes.flatMap(Notice.init) }
            if entries.first?.sequence != previous + 1 || Int64(entries.count) < server - previous {
                drop = true
                logger?.log(
                    level: .warning,
                    message: "The shared tier's change log no longer reaches back to this "
                        + "instance's position; dropping local records",
                    metadata: [
                        "position": "\(previous)",
                        "server": "\(server)",
                    ])
            } else {
                changes = try await currentState(of: entries)
            }
        } else {
            // A fresh start (no position), or a server that lost its data: nothing local can be trusted.
            drop = true
            if previous != nil {
                logger?.log(
                    level: .warning,
                    message: "The shared tier's sequence went back (its data was lost?); "
                        + "dropping local records", metadata: ["server": settings.redactedURL])
            }
        }
        let core = self.core
        let dropped = drop
        try await core.writer.perform { [self] context in
            if dropped {
                for info in try StoreCore.typeInfos(meta: core.meta, in: context.txn) {
                    guard let schema = try localSchema(named: info.name, context: context) else { continue }
                    if try context.txn.entryCount(schema.records) > 0 {
                        try RecordWriter.clear(schema: schema, context: context)
                    }
                }
            }
            for change in changes { try apply(change, context: context) }
            state.withLock { state in
                state.appliedSeq = server
                state.receivedSeq = server
                state.phase = .live
                state.catchUps += 1
                if dropped { state.drops += 1 }
            }
        }
    }

    /// The changes that bring local copies to the server's present state: for each record the log names (at
    /// its last mention), its current bytes; clears in their place.
    private func currentState(of entries: [Notice]) async throws -> [LocalChange] {
        let database = UInt32(truncatingIfNeeded: endpoint.database)
        let relevant = entries.filter { $0.database == database }
        var last: [String: Int] = [:]
        for (position, entry) in relevant.enumerated() where entry.kind != UInt8(ascii: "C") {
            last[entry.type + "\u{0}" + entry.id] = position
        }
        let named = relevant.enumerated().filter {
            $0.element.kind != UInt8(ascii: "C")
                && last[$0.element.type + "\u{0}" + $0.element.id] == $0.offset
        }
        let keys = named.map {
            layout.record(type: SharedTierLayout.escape($0.element.type), id: Array($0.element.id.utf8))
        }
        let current = try await records(keys: keys)
        var byPosition: [Int: [UInt8]?] = [:]
        for (index, item) in named.enumerated() { byPosition[item.offset] = current[index] }
        var changes: [LocalChange] = []
        for (position, entry) in relevant.enumerated() {
            if entry.kind == UInt8(ascii: "C") {
                changes.append(LocalChange(kind: entry.kind, type: entry.type, id: "", record: nil))
            } else if let found = byPosition[position] {
                changes.append(
                    LocalChange(
                        kind: found == nil ? UInt8(ascii: "D") : UInt8(ascii: "P"),
                        type: entry.type, id: entry.id, record: found))
            }
        }
        return changes
    }
}

/// An expected record changed on the shared tier between a read and the write based on it.
struct SharedTierConflict: Error {
    let message: String
}
