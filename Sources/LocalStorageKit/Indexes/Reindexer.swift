import CLMDB

/// Brings a type's index entries in line with a changed declaration, in bounded write batches.
///
/// Indexes that were removed (or changed kind) lose their database; then every record whose header
/// carries an older declaration signature is decoded once, its index values recomputed, its header
/// rewritten and its entries added. `meta` records the new signature only after the last batch, so an
/// interrupted re-index simply runs again on the next open.
struct Reindexer<T: LocalStorable>: Sendable {
    let logger: (any StorageLogger)?
    static var batchSize: Int { 1000 }

    func run(schema: TypeSchema, previous: TypeInfo, writer: Writer) throws {
        let kinds = Dictionary(schema.indexes.map { ($0.name, $0.kind) }, uniquingKeysWith: { first, _ in first })
        try writer.transact { context in
            for old in previous.indexes where kinds[old.name] != old.kind {
                let name = TypeSchema.indexName(schema.name, old.name)
                guard let dbi = try context.txn.openDatabase(name, flags: TypeSchema.duplicateFlags, create: false)
                else { continue }
                if kinds[old.name] == nil { try context.txn.drop(dbi) } else { try context.txn.empty(dbi) }
            }
        }
        logger?.log(level: .notice, message: "Re-indexing \(schema.name) after its index declaration changed",
                    metadata: ["type": schema.name])
        var after: [UInt8]?
        var visited = 0
        var rewritten = 0
        while true {
            let (seen, changed, last) = try writer.transact { context in
                try reindexBatch(schema: schema, after: after, context: context)
            }
            visited += seen
            rewritten += changed
            after = last
            logger?.log(level: .info, message: "Re-indexed \(visited) records of \(schema.name)",
                        metadata: ["type": schema.name, "rewritten": "\(rewritten)"])
            if seen < Reindexer.batchSize { break }
        }
    }

    private func reindexBatch(schema: TypeSchema, after: [UInt8]?,
                              context: Writer.Context) throws -> (seen: Int, changed: Int, last: [UInt8]?) {
        let txn = context.txn
        var keys: [[UInt8]] = []
        try txn.withCursor(schema.records) { cursor in
            var entry = try cursor.seek(atLeast: after ?? [])
            if let current = entry, let after, current.key.elementsEqual(after) {
                entry = try cursor.move(MDB_NEXT)
            }
            while let current = entry, keys.count < Reindexer.batchSize {
                keys.append(Array(current.key))
                entry = try cursor.move(MDB_NEXT)
            }
        }
        var changed = 0
        for key in keys {
            guard let bytes = try txn.get(schema.records, key: key) else { continue }
            let id = String(decoding: key, as: UTF8.self)
            do {
                let view = try RecordView(bytes)
                guard view.signature != schema.signature else { continue }
                let value = try RecordDecoding.decode(T.self, view: view, id: id)
                var header = view.header()
                header.indexValues = value.indexValuesForStorage
                header.signature = schema.signature
                try RecordWriter.replaceHeader(of: view, with: header, key: key, schema: schema, txn: txn)
                changed += 1
            } catch let error as LMDBError {
                throw error
            } catch {
                logger?.log(level: .warning, message: "Could not re-index a record; it is left as it was",
                            metadata: ["type": schema.name, "id": id, "error": "\(error)"])
            }
        }
        return (keys.count, changed, keys.last)
    }
}
