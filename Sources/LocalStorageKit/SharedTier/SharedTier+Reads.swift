/// Reading records from the shared tier: single records, pipelined batches, and a record with the server's
/// sequence for filling the near cache.
extension SharedTier {
    /// The record `id` of a type as the server holds it (nil when absent).
    func record(type: String, id: [UInt8]) async throws(LocalStorageError) -> [UInt8]? {
        let reply = try await connection.callUnlessCancelled([
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
        var start = 0
        var commands: [[[UInt8]]] = []
        while start < keys.count {
            let end = min(keys.count, start + 512)
            commands.append([Array("MGET".utf8)] + keys[start..<end])
            start = end
        }
        guard !commands.isEmpty else { return [] }
        return try Self.values(
            ofMGETReplies: try await connection.sendUnlessCancelled(commands), keyCounts: commands.map { $0.count - 1 },
            server: endpoint.label)
    }

    /// The values `MGET` replies hold, one per key (nil for a missing one), checked against the number of keys
    /// each asked for: a reply that holds another number of values would put records on the wrong ids.
    ///
    /// - Throws: `sharedTierUnavailable` for a reply missing, not an array, of another length, or holding a value
    ///   that is neither a string nor nil.
    static func values(
        ofMGETReplies replies: [RESPValue], keyCounts: [Int], server: String
    ) throws(LocalStorageError) -> [[UInt8]?] {
        guard replies.count == keyCounts.count else {
            throw .sharedTierUnavailable("\(server) answered \(replies.count) of \(keyCounts.count) MGETs")
        }
        var out: [[UInt8]?] = []
        out.reserveCapacity(keyCounts.reduce(0, +))
        for (reply, keys) in zip(replies, keyCounts) {
            guard let values = reply.elements, values.count == keys else {
                throw .sharedTierUnavailable("MGET of \(keys) keys at \(server) replied \(reply.summary)")
            }
            for value in values { out.append(try string(value, server: server)) }
        }
        return out
    }

    /// The records `ids` of `type` (nil for each the server does not hold) and the change sequence, read together
    /// in one round trip (one moment of the server's).
    func recordsWithSequence(
        type: String, ids: [[UInt8]]
    ) async throws(LocalStorageError) -> (records: [[UInt8]?], sequence: Int64) {
        let escaped = SharedTierLayout.escape(type)
        let values = try await getTogether(ids.map { layout.record(type: escaped, id: $0) } + [layout.sequence])
        var records: [[UInt8]?] = []
        records.reserveCapacity(ids.count)
        for value in values.dropLast() { records.append(try Self.string(value, server: endpoint.label)) }
        return (records, try sequence(values[values.count - 1]))
    }

    /// The server's change sequence (0 before the first change) and the epoch of its history (``SharedTierLayout/epoch``),
    /// read together.
    func sequenceAndEpoch() async throws(LocalStorageError) -> (sequence: Int64, epoch: [UInt8]?) {
        let values = try await getTogether([layout.sequence, layout.epoch])
        return (try sequence(values[0]), try Self.string(values[1], server: endpoint.label))
    }

    /// The replies of a `GET` of each of `keys`, read in one `MULTI`/`EXEC` (one moment of the server's).
    private func getTogether(_ keys: [[UInt8]]) async throws(LocalStorageError) -> [RESPValue] {
        let replies = try await connection.sendUnlessCancelled(
            [[Array("MULTI".utf8)]] + keys.map { [Array("GET".utf8), $0] } + [[Array("EXEC".utf8)]])
        guard replies.count == keys.count + 2, let values = replies.last?.elements, values.count == keys.count else {
            throw .sharedTierUnavailable(
                "MULTI/GET/EXEC at \(endpoint.label) replied \(replies.map(\.summary).joined(separator: ", "))")
        }
        return values
    }

    /// What a `GET` of the change sequence replied, as a number (0 when the key is absent).
    private func sequence(_ value: RESPValue) throws(LocalStorageError) -> Int64 {
        if case .null = value { return 0 }
        guard let number = value.int else {
            throw .sharedTierUnavailable("GET of the sequence at \(endpoint.label) replied \(value.summary)")
        }
        return number
    }

    /// What a `GET` (or one value of an `MGET`) replied: the string's bytes, or nil for an absent key.
    ///
    /// - Throws: `sharedTierUnavailable` for any other reply.
    static func string(_ value: RESPValue, server: String) throws(LocalStorageError) -> [UInt8]? {
        switch value {
        case .null: return nil
        case .bulk(let bytes): return bytes
        default: throw .sharedTierUnavailable("GET at \(server) replied \(value.summary) for a key")
        }
    }
}
