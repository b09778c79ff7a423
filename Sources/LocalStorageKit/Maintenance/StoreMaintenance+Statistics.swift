import CLMDB

extension StoreMaintenance {
    /// Figures about the whole store and each type, from one snapshot.
    ///
    /// Complexity: O(records): the byte counts read every record's header in place (no payload is decoded).
    /// - Throws: ``LocalStorageError`` when the store cannot be read.
    public func statistics() throws -> StoreStatistics {
        let environment = self.environment
        let info = environment.info()
        let catalog = currentCatalog
        let now = Clock.now()
        return try read { txn in
            let main = try environment.mainStatistics()
            var pages = StoreStatistics.Pages(
                capacity: info.me_mapsize / max(1, Int(main.ms_psize)), used: info.me_last_pgno + 1,
                free: try txn.freePageCount(), branch: main.ms_branch_pages, leaf: main.ms_leaf_pages,
                overflow: main.ms_overflow_pages)
            var types: [StoreStatistics.TypeStatistics] = []
            for type in catalog.sortedTypes {
                let schema = type.schema
                var typePages = 0
                for dbi in StoreMaintenance.databases(of: schema).map(\.dbi) {
                    let stat = try txn.stat(dbi)
                    pages.branch += stat.ms_branch_pages
                    pages.leaf += stat.ms_leaf_pages
                    pages.overflow += stat.ms_overflow_pages
                    typePages += stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages
                }
                var bytes = 0
                var payloadBytes = 0
                try txn.withCursor(schema.records) { cursor in
                    var entry = try cursor.move(MDB_FIRST)
                    while let current = entry {
                        bytes += current.value.count
                        payloadBytes += (try? RecordView(current.value))?.payload.count ?? 0
                        entry = try cursor.move(MDB_NEXT)
                    }
                }
                types.append(StoreStatistics.TypeStatistics(
                    name: schema.name, records: try txn.entryCount(schema.records), bytes: bytes,
                    payloadBytes: payloadBytes,
                    expired: try RecordReader.expiredKeys(schema: schema, now: now, txn: txn).count,
                    pages: typePages, updateEntries: try txn.entryCount(schema.updated),
                    expiryEntries: try txn.entryCount(schema.expiry),
                    indexes: try schema.indexes.map { index in
                        StoreStatistics.Index(name: index.name, kind: index.kind.name,
                                              entries: try txn.entryCount(index.dbi))
                    }))
            }
            return StoreStatistics(
                path: directory.path, mapSize: info.me_mapsize,
                usedBytes: (info.me_last_pgno + 1) * Int(main.ms_psize),
                pageSize: Int(main.ms_psize), pages: pages, readersInUse: try environment.readersInUse(),
                maxReaders: Int(info.me_maxreaders), lastTransactionID: info.me_last_txnid, types: types)
        }
    }
}
