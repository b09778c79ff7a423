/// Reading records from the shared tier: single records, pipelined batches, and a record with the server's
/// sequence for filling the near cache.
extension SharedTier {
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
        var start = 0
        var commands: [[[UInt8]]] = []
        while start < keys.count {
            let end = min(keys.count, start + 512)
            commands.append([Array("MGET".utf8)] + keys[start..<end])
            start = end
        }
        guard !commands.isEmpty else { return [] }
        return try Self.values(
            ofMGETReplies: try await connection.send(commands), keyCounts: commands.map { $0.count - 1 },
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
            for value in values {
                switch value {
                case .null: out.append(nil)
                case .bulk(let bytes): out.append(bytes)
                default: throw .sharedTierUnavailable("MGET at \(server) replied \(value.summary) for a key")
                }
            }
        }
        return out
    }

    /// The record `id` of a type as the server holds it (nil when absent), with the server's change sequence
    /// at that moment (read in one `MULTI`/`EXEC`), so that a fill knows which changes it already reflects.
    func recordWithSequence(
        type: String, id: [UInt8]
    ) async throws(LocalStorageError) -> (
        bytes: [UInt8]?, sequence: Int64
    ) {
        let replies = try await connection.send([
            [Array("MULTI".utf8)],
            [Array("GET".utf8), layout.record(type: SharedTierLayout.escape(type), id: id)],
            [Array("GET".utf8), layout.sequence],
            [Array("EXEC".utf8)],
        ])
        guard replies.count == 4, let values = replies[3].elements, values.count == 2 else {
            throw .sharedTierUnavailable(
                "MULTI/GET/EXEC at \(endpoint.label) replied \(replies.map(\.summary).joined(separator: ", "))")
        }
        let bytes: [UInt8]?
        if case .null = values[0] {
            bytes = nil
        } else if let found = values[0].bytes {
            bytes = found
        } else {
            throw .sharedTierUnavailable("GET at \(endpoint.label) replied \(values[0].summary)")
        }
        let sequence: Int64
        if case .null = values[1] {
            sequence = 0
        } else if let number = values[1].int {
            sequence = number
        } else {
            throw .sharedTierUnavailable("GET of the sequence at \(endpoint.label) replied \(values[1].summary)")
        }
        return (bytes, sequence)
    }
}
