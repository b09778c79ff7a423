import Foundation

@testable import LocalStorageKit

/// Stores as older versions of the library wrote them, made from a store of this version.
enum OlderLayouts {
    /// Turns the store `storage` has open into one of `layout` (2 to 5) as a version of that layout writes it: every
    /// type's update order kept (before 6), a signature entry for every readable record and no declaration counters
    /// (before 5), named headers only (before 4), no count tree (2). The store must be closed and opened again afterwards, and not written to
    /// before: at 2 the count tree's database is dropped, which closes the handle its cached schemas hold.
    static func make(_ storage: LocalStorage, layout: Int) async throws {
        precondition((2...5).contains(layout))
        let meta = storage.core.meta
        try await storage.core.writer.perform { context in
            let txn = context.txn
            try keepEveryUpdateOrder(meta: meta, context: context)
            for info in try TypeRegistry.all(meta: meta, txn: txn).infos {
                let schema = try TypeSchema.open(info, in: txn)
                guard layout < TypeRegistry.declarationCountsLayout else { continue }
                var rewritten: [(key: [UInt8], bytes: [UInt8])] = []
                try txn.withCursor(schema.records) { cursor in
                    var entry = try cursor.move(.first)
                    while let record = entry {
                        if case .readable(let view, var header) = try StoredRecord(record.value).header(
                            in: schema, txn: txn)
                        {
                            try txn.put(
                                schema.signatures, key: RecordWriter.signatureKey(header.signature),
                                value: Array(record.key))
                            if layout < TypeRegistry.compactHeadersLayout, header.layout == .compact {
                                header.layout = .named
                                rewritten.append(
                                    (Array(record.key), try header.serialized(payload: Array(view.payload))))
                            }
                        }
                        entry = try cursor.move(.next)
                    }
                }
                for (key, bytes) in rewritten { try txn.put(schema.records, key: key, value: bytes) }
                try CountTree.clearDeclarationCounts(schema: schema, txn: txn)
            }
            if layout < TypeRegistry.countTreeLayout,
                let counts = try txn.openDatabase(CountTree.databaseName, create: false)
            {
                // Layout 2 has no count tree's database: its presence makes queries trust it.
                try txn.drop(counts)
            }
            try txn.put(meta, key: TypeRegistry.layoutKey, value: Array("\(layout)".utf8))
        }
    }

    /// Builds every type's update order, as a store of a layout before 6 keeps them all.
    static func keepEveryUpdateOrder(meta: Database, context: CommitQueue.Context) throws {
        for info in try TypeRegistry.all(meta: meta, txn: context.txn).infos {
            try UpdateOrder.keep(try TypeSchema.open(info, in: context.txn), context: context)
        }
    }
}
