import Synchronization

/// Writing through the shared tier: the scripts that write a record, its index members, its expiry and its
/// change notice on the server in one step, then the local commit of what the server holds.
extension SharedTier {
    /// Runs one of ``SharedTierScripts`` with `EVALSHA` (loading it first, and again after the server lost it).
    /// Returns the script's reply, an error reply included. A script over many `records` may take that many
    /// times ``scriptTimePerRecord`` longer than `readTimeout` to answer.
    func run(
        _ name: String, _ source: String, _ arguments: [[UInt8]], records: Int = 1, unlessCancelled: Bool = false
    ) async throws(LocalStorageError) -> RESPValue {
        try await checkNamespaceKey()
        let head: [[UInt8]] = [
            layout.prefix, RecordWriter.timeKey(clock.wallNanoseconds()),
            // The change log's last rank to trim, as text: formatting a number costs the script more than a command.
            Array(String(-1 - settings.changeLogRetention).utf8),
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
            let command = [Array("EVALSHA".utf8), hash, Array("0".utf8)] + head + arguments
            let reply =
                unlessCancelled
                ? try await connection.sendUnlessCancelled([command])[0]
                : try await connection.send(
                    [command], extraTime: scriptTimePerRecord.withLock { $0 } * max(0, records - 1))[0]
            if case .error(let message) = reply, message.hasPrefix("NOSCRIPT") { continue }
            return reply
        }
        throw .sharedTierUnavailable("the \(name) script at \(endpoint.label) could not be loaded")
    }

    /// How long a script may spend on each record it writes beyond `readTimeout` (``scriptTimePerRecord``
    /// unless a test changes it): the put script's ~14 commands a record took 66–91 µs on the server
    /// (DESIGN.md), so 100,000 records run for seconds before the reply.
    static let defaultScriptTimePerRecord = Duration.microseconds(500)

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

    /// Builds the put of `record` at `now` with `expiresAt`. The payload is sealed when the store is encrypted
    /// (so the server, and every instance's copy, hold it sealed), with the cipher every host can open, unless `storedEnvelope` says it is already
    /// in its stored form (a record read from the server and written back).
    ///
    /// - Throws: ``LocalStorageError/recordTooLarge(id:size:limit:)`` when the payload alone exceeds this
    ///   instance's `maxBytes` (its type's or the store's): nothing is sent.
    func put(
        _ record: PreparedRecord, expiresAt: Int64, now: Int64, schema: TypeSchema,
        createdAt: Int64? = nil, expect: [UInt8] = [], storedEnvelope: PayloadEnvelope? = nil
    ) throws(LocalStorageError) -> Put {
        let (envelope, payload) =
            if let storedEnvelope {
                (storedEnvelope, record.payload)
            } else if let sealing = schema.sealing {
                try sealing.seal(
                    record.payload, format: record.format, typeName: schema.name, id: record.key, portable: true)
            } else {
                (PayloadEnvelope(), record.payload)
            }
        // Checked before the server holds it, as a local save checks before it writes (each instance's copy is
        // the server's bytes, so this payload is what the local limits count). A rewrite of a stored record (a new
        // expiry) keeps its payload: it is not a new record to refuse.
        if storedEnvelope == nil {
            try Evictor.refuseOversized(
                record.id, size: payload.count, schema: schema, storeMaxBytes: core.limits.store?.maxBytes)
        }
        let header = RecordHeader(
            format: record.format, version: record.version, createdAt: createdAt ?? now,
            updatedAt: now, expiresAt: expiresAt, signature: schema.signature,
            indexValues: record.indexValues, envelope: envelope)
        return Put(record: record, bytes: try header.serialized(payload: payload), header: header, expect: expect)
    }

    /// Writes records on the server in one script; returns each one's final bytes and sequence. With `lease`
    /// (a lease key and the value it must hold), only while that load lease still holds.
    ///
    /// - Throws: `sharedTierUnavailable` (nothing was written), `decodingFailed` when the server holds a
    ///   record at a newer version, `SharedTierConflict` when an expected record changed, or
    ///   `SharedTierLeaseLost` when the lease no longer holds.
    func write(
        _ puts: [Put], schema: TypeSchema, now: Int64, lease: (key: [UInt8], value: [UInt8])? = nil
    ) async throws -> [(bytes: [UInt8], sequence: Int64)] {
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
        let appliedBefore = appliedPosition
        let reply: RESPValue
        if let lease {
            reply = try await run(
                "leasedPut", SharedTierScripts.leasedPut, arguments + [lease.key, lease.value], records: puts.count)
        } else {
            reply = try await run("put", SharedTierScripts.put, arguments, records: puts.count)
        }
        if case .error(let message) = reply {
            if message.hasPrefix("LEASELOST") { throw SharedTierLeaseLost(gone: message.hasPrefix("LEASELOST gone")) }
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
        noteIssued(out.map(\.sequence), appliedBefore: appliedBefore)
        return out
    }

    /// The last sequence the local store reflects (0 before any).
    var appliedPosition: Int64 { state.withLock { $0.appliedSeq ?? 0 } }

    /// Notes that the server started its count anew when it gave this instance's write sequence 1 although the
    /// local store already reflected a later change when the write was sent (a sequence is given out once in
    /// one history of the server): ``awaitApplied(_:)`` catches up then.
    func noteIssued(_ sequences: [Int64], appliedBefore: Int64) {
        guard appliedBefore >= 1, sequences.contains(1) else { return }
        state.withLock { $0.countStartedAnew = true }
    }

    /// Commits this instance's own written records locally (unless the applier already holds them or
    /// something later), then waits for any not admitted.
    func commitOwn(
        _ written: [(bytes: [UInt8], sequence: Int64)], records: [PreparedRecord],
        schema: TypeSchema
    ) async throws {
        // The notes of admitted writes go with a transaction that does not commit (``keepRollbackPoint(in:)``).
        let pending = try await core.writer.perform { [self] context -> [Int64] in
            var pending: [Int64] = []
            for (position, item) in written.enumerated() {
                let id = String(decoding: records[position].key, as: UTF8.self)
                if let admission = admitsOwn(item.sequence, type: schema.name, id: id, context: context) {
                    try RecordWriter.putReplica(
                        item.bytes, key: records[position].key, value: records[position].value,
                        schema: schema, context: context, asNew: admission.overUnannouncedFill)
                } else {
                    pending.append(item.sequence)
                }
            }
            return pending
        }
        if let last = pending.max() { await awaitApplied(last) }
    }

    /// Deletes records on the server; returns the sequences.
    func delete(ids: [String], schema: TypeSchema) async throws(LocalStorageError) -> [Int64] {
        try await delete(ids: ids, schema: schema, lease: nil)
    }

    /// Deletes a record on the server only while the load lease `lease` (its key and the value it must hold)
    /// holds, in one script; returns the sequence.
    ///
    /// - Throws: `SharedTierLeaseLost` when the lease no longer holds (nothing was deleted), or
    ///   `sharedTierUnavailable`.
    func delete(id: String, schema: TypeSchema, lease: (key: [UInt8], value: [UInt8])) async throws -> Int64 {
        let sequences = try await delete(ids: [id], schema: schema, lease: lease)
        guard let sequence = sequences.first else { throw SharedTierLeaseLost() }
        return sequence
    }

    /// Deletes records on the server, under `lease` when given (an empty result when it no longer holds).
    private func delete(
        ids: [String], schema: TypeSchema, lease: (key: [UInt8], value: [UInt8])?
    ) async throws(LocalStorageError) -> [Int64] {
        let type = SharedTierLayout.escape(schema.name)
        var arguments: [[UInt8]] = []
        for id in ids { arguments += [type, Array(id.utf8), notice(UInt8(ascii: "D"), type: schema.name, id: id)] }
        let appliedBefore = appliedPosition
        let reply: RESPValue
        if let lease {
            reply = try await run(
                "leasedDelete", SharedTierScripts.leasedDelete, arguments + [lease.key, lease.value], records: ids.count
            )
            if case .error(let message) = reply, message.hasPrefix("LEASELOST") { return [] }
        } else {
            reply = try await run("delete", SharedTierScripts.delete, arguments, records: ids.count)
        }
        _ = try expectSuccess(reply, script: lease == nil ? "delete" : "leasedDelete")
        guard let values = reply.elements?.compactMap(\.int), values.count == ids.count else {
            throw .sharedTierUnavailable("the delete script at \(endpoint.label) replied \(reply.summary)")
        }
        noteIssued(values, appliedBefore: appliedBefore)
        return values
    }

    /// Deletes every record of a type on the server; returns the sequence.
    func clear(schema: TypeSchema) async throws(LocalStorageError) -> Int64 {
        let type = SharedTierLayout.escape(schema.name)
        var arguments: [[UInt8]] = [type, notice(UInt8(ascii: "C"), type: schema.name, id: "")]
        for index in schema.allIndexes { arguments.append(layout.index(type: type, name: index.name)) }
        let appliedBefore = appliedPosition
        let reply = try expectSuccess(try await run("clear", SharedTierScripts.clear, arguments), script: "clear")
        guard let sequence = reply.int else {
            throw .sharedTierUnavailable("the clear script at \(endpoint.label) replied \(reply.summary)")
        }
        noteIssued([sequence], appliedBefore: appliedBefore)
        return sequence
    }
}
