import Foundation

extension StoreMaintenance {
    /// Reseals every record that is not sealed with the current key (``StorageEncryption/key``): records
    /// sealed with one of the previous keys, and records written before the store was encrypted. Runs in
    /// bounded transactions, so a kill loses at most the batch in flight; running it again finishes the job.
    ///
    /// Records that fail authentication under every configured key are left as they are and counted in
    /// `failed` (`verify` names them).
    ///
    /// - Returns: How many records were resealed and how many could not be opened.
    /// - Throws: ``MaintenanceError/invalidArgument(_:)`` when the store was opened without a key.
    public func rekey(progress: MaintenanceProgressHandler? = nil) async throws -> (resealed: Int, failed: Int) {
        guard sealing.current != nil else {
            throw MaintenanceError.invalidArgument("rekey needs the store's new key (--new-key-file)")
        }
        let types = currentCatalog.sortedTypes
        let schemas = types.map(\.schema)
        let total = try read { txn in
            try checkPages(of: types, in: txn)  // A reseal writes the index entries and the counts too.
            return try schemas.reduce(0) { $0 + (try txn.entryCount($1.records)) }
        }
        return try await write { writer in
            var (resealed, failed, done) = (0, 0, 0)
            for schema in schemas {
                var after: [UInt8]?
                while true {
                    let batch = try writer.transact { context in
                        try StoreMaintenance.resealBatch(schema: schema, after: after, context: context)
                    }
                    resealed += batch.resealed
                    failed += batch.failed
                    done += batch.visited
                    progress?(MaintenanceProgress(task: "rekey", completed: done, total: total))
                    guard let last = batch.last else { break }
                    after = last
                }
            }
            // What a process without the key, or still on a previous key, wrote behind the pass is resealed in
            // the transaction that writes the key check value (from which on the store holds sealed payloads
            // only), so none is left unsealed or under an old key. Sealed records are told apart by the key
            // id in their seal: only those naming another key are opened.
            let (sealing, meta) = (self.sealing, self.meta)
            let late = try writer.transact { context in
                var late = 0
                for schema in schemas {
                    var after: [UInt8]?
                    repeat {
                        // Records that fail to open were counted by the pass.
                        let batch = try StoreMaintenance.resealBatch(
                            schema: schema, after: after, laggingOnly: true, context: context)
                        late += batch.resealed
                        after = batch.last
                    } while after != nil
                }
                if let current = sealing.current, !sealing.holdsOnlySealed {
                    // A plain store's dictionaries are sealed with the check value, not before (see
                    // `PayloadSealing.open`).
                    try PayloadSealing.sealStaleDictionaries(meta: meta, txn: context.txn, keys: sealing.keys)
                    try PayloadSealing.writeCheck(with: current, meta: meta, txn: context.txn)
                }
                return late
            }
            sealing.noteKeyCheckWritten()
            return (resealed + late, failed)
        }
    }

    /// Records resealed per transaction: small, so that a killed rekey loses little.
    static var rekeyBatchSize: Int { 1_000 }

    /// Reseals up to ``rekeyBatchSize`` records of `schema` after the key `after`: those not sealed with the
    /// current key, or with `laggingOnly` those not sealed or whose seal names another key (a sealed record
    /// naming the current key is not opened: ``PayloadSealing/mayNeedResealing(_:)``). A payload is resealed
    /// as it is inside its seal (a compressed one stays compressed); its header and entries stay. A batch that
    /// changes the type's payload bytes has the commit keep its byte limits (review-94 #5: sealing a plain store
    /// grew every payload, and a store at its `maxBytes` stayed over it until its next save).
    private static func resealBatch(
        schema: TypeSchema, after: [UInt8]?, laggingOnly: Bool = false, context: CommitQueue.Context
    ) throws -> (resealed: Int, failed: Int, visited: Int, last: [UInt8]?) {
        guard let sealing = schema.sealing else { return (0, 0, 0, nil) }
        let txn = context.txn
        var rewrites: [(key: [UInt8], bytes: [UInt8])] = []
        var payloadBytes = 0
        var (failed, visited) = (0, 0)
        var last: [UInt8]?
        try txn.withCursor(schema.records) { cursor in
            var entry =
                try after.map { key in
                    let found = try cursor.seek(atLeast: key)
                    return found.map { Array($0.key) == key } == true ? try cursor.move(.next) : found
                } ?? cursor.move(.first)
            while let current = entry, visited < rekeyBatchSize {
                visited += 1
                last = Array(current.key)
                do {
                    let view = try RecordView(current.value)
                    if !laggingOnly || sealing.mayNeedResealing(view),
                        let (envelope, payload) = try sealing.resealed(
                            view, typeName: schema.name, id: Array(current.key))
                    {
                        var bytes = Array(current.value[0..<view.headerLength])
                        bytes[1] = view.format.rawValue | envelope.rawValue
                        bytes += payload
                        rewrites.append((Array(current.key), bytes))
                        payloadBytes += payload.count - view.payload.count
                    }
                } catch let error as LocalStorageError {
                    guard case .decodingFailed = error else { throw error }
                    failed += 1
                }
                entry = try cursor.move(.next)
            }
        }
        for rewrite in rewrites { try txn.put(schema.records, key: rewrite.key, value: rewrite.bytes) }
        try CountTree.addPayloadBytes(payloadBytes, schema: schema, txn: txn)
        if payloadBytes != 0 { context.resizedTypes.insert(schema.number) }
        return (rewrites.count, failed, visited, visited == 0 ? nil : last)
    }
}
