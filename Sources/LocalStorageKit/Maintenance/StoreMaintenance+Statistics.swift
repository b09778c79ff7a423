extension StoreMaintenance {
    /// Figures about the whole store and each type, from one snapshot.
    ///
    /// Complexity: O(records): the byte counts read every record's header in place (no payload is decoded).
    /// A record whose bytes cannot be read is counted as damaged, its bytes in `bytes` but not in
    /// `payloadBytes`, as the other maintenance commands report it rather than fail (`verify` names it).
    /// - Throws: ``LocalStorageError`` when the store cannot be read.
    public func statistics() throws -> StoreStatistics {
        // The map's figures (its last page, the file's size) are the snapshot's only when no commit came between
        // the snapshot and reading them: with writers running, the lines of `stats` contradicted each other (a
        // file of 770 pages beside a map whose last page was 119 made 92% of it free). Read again until they
        // match, a few times at most.
        var attempt = 1
        while true {
            // The last attempt takes whatever it reads: a store written without a pause still gets figures.
            if let statistics = try statistics(acceptingAnyTransaction: attempt >= Self.statisticsAttempts) {
                return statistics
            }
            attempt += 1
        }
    }

    /// How many snapshots ``statistics()`` takes at most before it reports figures a commit came between.
    static let statisticsAttempts = 10

    /// The statistics of one snapshot; nil when a commit came between the snapshot and the map's figures and
    /// `acceptingAnyTransaction` is false.
    private func statistics(acceptingAnyTransaction: Bool) throws -> StoreStatistics? {
        let environment = self.environment
        let catalog = currentCatalog
        let now = clock.wallNanoseconds()
        return try read { txn -> StoreStatistics? in
            let info = environment.info()
            let fileBytes = try environment.dataFileSize()
            guard acceptingAnyTransaction || info.lastTransactionID == txn.id else { return nil }
            try checkPages(of: catalog.sortedTypes, in: txn)
            let main = try environment.mainStatistics()
            var pages = StoreStatistics.Pages(
                capacity: info.mapSize / max(1, main.pageSize), used: info.lastPage + 1,
                free: try txn.freePageCount(), branch: main.branchPages, leaf: main.leafPages,
                overflow: main.overflowPages)
            // `mdb_stat` leaves out the sub-trees of sorted duplicates (every index, the update times, the
            // signatures and expiry times): a walk of those databases' trees adds them from their records. The
            // same walk finds the store-wide databases (counts, leases, the eviction policies' state). On
            // damaged pages its figures are not used.
            let walk = try environment.pageTotals(in: txn) { name in
                !name.hasPrefix("r.") && name != TypeRegistry.metaName && name != ChangeLog.name
            }
            let walked = walk?.totals
            var types: [StoreStatistics.TypeStatistics] = []
            var databases = [
                StoreStatistics.Database(name: "(main)", main),
                .init(name: "(free pages)", try txn.statistics(.freePages)),
                .init(name: "meta", try txn.statistics(meta)),
            ]
            if let changes = core?.changeLog.database {
                databases.append(.init(name: ChangeLog.name, try txn.statistics(changes)))
            }
            databases += try Self.storeWideDatabases(walk: walk, txn: txn)
            // The store-wide databases' pages count in the totals too (the main database's already do).
            for database in databases.dropFirst() {
                pages.branch += database.branchPages
                pages.leaf += database.leafPages
                pages.overflow += database.overflowPages
            }
            for type in catalog.sortedTypes {
                let schema = type.schema
                var typePages = 0
                for (role, dbi) in StoreMaintenance.databases(of: schema) {
                    var stat = try txn.statistics(dbi)
                    if let totals = walked?[role.databaseName(typeNumber: schema.number)] {
                        stat.branchPages = DatabaseStatistics.plausible(totals.branch)
                        stat.leafPages = DatabaseStatistics.plausible(totals.leaf)
                        stat.overflowPages = DatabaseStatistics.plausible(totals.overflow)
                    }
                    databases.append(.init(name: "\(schema.name)/\(role.name)", stat))
                    pages.branch += stat.branchPages
                    pages.leaf += stat.leafPages
                    pages.overflow += stat.overflowPages
                    typePages += stat.branchPages + stat.leafPages + stat.overflowPages
                }
                var bytes = 0
                var payloadBytes = 0
                var damaged = 0
                var newer = 0
                try txn.withCursor(schema.records) { cursor in
                    var entry = try cursor.move(.first)
                    while let current = entry {
                        bytes += current.value.count
                        switch StoredRecord(current.value) {
                        case .readable(let view): payloadBytes += view.payload.count
                        case .damaged:  // It has no payload size to give.
                            if RecordView.newerLayout(of: current.value) == nil { damaged += 1 } else { newer += 1 }
                        }
                        entry = try cursor.move(.next)
                    }
                }
                types.append(
                    StoreStatistics.TypeStatistics(
                        name: schema.name, records: try txn.entryCount(schema.records), bytes: bytes,
                        payloadBytes: payloadBytes, damaged: damaged, newer: newer,
                        expired: try RecordReader.expiredKeys(schema: schema, now: now, txn: txn).count,
                        notReindexed: try notReindexed(schema, txn: txn),
                        pages: typePages, updateEntries: try txn.entryCount(schema.updated),
                        expiryEntries: try txn.entryCount(schema.expiry),
                        indexes: try Self.indexStatistics(of: schema, txn: txn)))
                types[types.count - 1].keepsUpdateOrder = try schema.keepsUpdateOrder(txn)
            }
            var statistics = StoreStatistics(
                path: directory.path, mapSize: info.mapSize,
                usedBytes: (info.lastPage + 1) * main.pageSize,
                pageSize: main.pageSize, pages: pages, readersInUse: try environment.readersInUse(),
                maxReaders: info.maxReaders, lastTransactionID: info.lastTransactionID, types: types)
            statistics.layout = try TypeRegistry.storedLayout(meta: meta, txn: txn)
            statistics.addTotals(fileBytes: fileBytes)
            statistics.databases = databases.sorted { ($0.pages, $1.name) > ($1.pages, $0.name) }
            return statistics
        }
    }

    /// The type's indexes with their entries: the current declaration's, then those only another declaration has
    /// that hold entries (what `stats` shows whichever app registered the type last).
    static func indexStatistics(of schema: TypeSchema, txn: Transaction) throws -> [StoreStatistics.Index] {
        var indexes = try schema.indexes.map { index in
            StoreStatistics.Index(name: index.name, kind: index.kind.name, entries: try txn.entryCount(index.dbi))
        }
        let declared = Set(schema.indexes.map(\.slot))
        for index in schema.allIndexes where !declared.contains(index.slot) {
            let entries = try txn.entryCount(index.dbi)
            guard entries > 0 else { continue }
            indexes.append(
                StoreStatistics.Index(name: index.name, kind: index.kind.name, entries: entries, isDeclared: false))
        }
        return indexes
    }
}

extension StoreStatistics {
    /// Fills in the totals and the space figures from the types and pages.
    mutating func addTotals(fileBytes: Int) {
        records = types.reduce(0) { $0 + $1.records }
        payloadBytes = types.reduce(0) { $0 + $1.payloadBytes }
        damaged = types.reduce(0) { $0 + $1.damaged }
        expired = types.reduce(0) { $0 + $1.expired }
        mapUsedBytes = max(0, pages.used - pages.free) * pageSize
        mapFreeBytes = max(0, mapSize - mapUsedBytes)
        self.fileBytes = fileBytes
        reclaimableBytes = pages.free * pageSize
        let filePages = max(pages.used, fileBytes / max(1, pageSize))
        freeFraction =
            Environment.FreeSpace(filePages: filePages, freePages: min(filePages, pages.free + filePages - pages.used))
            .fraction
    }
}

extension StoreStatistics.Database {
    /// The figures `mdb_stat` gives for the database called `name`.
    init(name: String, _ stat: DatabaseStatistics) {
        self.init(
            name: name, depth: stat.depth, branchPages: stat.branchPages, leafPages: stat.leafPages,
            overflowPages: stat.overflowPages, entries: stat.entries)
    }
}

extension StoreMaintenance.Role {
    /// The LMDB name of this database of type number `typeNumber` (see ``TypeSchema``).
    func databaseName(typeNumber: UInt32) -> String {
        switch self {
        case .records: "r.\(typeNumber)"
        case .updated: "u.\(typeNumber)"
        case .expiry: "e.\(typeNumber)"
        case .signatures: "s.\(typeNumber)"
        case .index(let index): "i.\(typeNumber).\(index.slot)"
        }
    }

    /// The database's name in ``StoreStatistics/databases``, after its type's.
    var name: String {
        switch self {
        case .records: "records"
        case .updated: "updated"
        case .expiry: "expiry"
        case .signatures: "signatures"
        case .index(let index): "index \(index.name)"
        }
    }

}

extension StoreMaintenance {
    /// The figures of the store-wide databases other than `meta` and the change log (counts, leases, the eviction
    /// policies' state) in `txn`'s snapshot, from `walk` of it. Without one (other processes committed twice since
    /// the snapshot began, so that neither meta page is its own: trial105 D4 left these databases out), from the
    /// main database's record of each: `mdb_stat`'s figures, which leave out the sub-trees of sorted duplicates.
    static func storeWideDatabases(
        walk: (totals: [String: DataFileWalk.PageTotals], records: [String: DatabaseRecord])?, txn: Transaction
    ) throws -> [StoreStatistics.Database] {
        var databases: [StoreStatistics.Database] = []
        for name in TypeRegistry.storeWideNames where name != TypeRegistry.metaName && name != ChangeLog.name {
            let walkedRecord = walk?.records[name]
            guard let record = try walkedRecord ?? databaseRecord(name, in: txn) else { continue }
            let totals =
                walk?.totals[name]
                ?? DataFileWalk.PageTotals(
                    branch: record.branchPages, leaf: record.leafPages, overflow: record.overflowPages)
            databases.append(
                StoreStatistics.Database(
                    name: name, depth: Int(record.depth),
                    branchPages: DatabaseStatistics.plausible(totals.branch),
                    leafPages: DatabaseStatistics.plausible(totals.leaf),
                    overflowPages: DatabaseStatistics.plausible(totals.overflow),
                    entries: DatabaseStatistics.plausible(record.entries)))
        }
        return databases
    }

    /// The record the main database keeps of the named database `name` in `txn`'s snapshot (its `mdb_stat` figures),
    /// or nil when the store has no such database.
    fileprivate static func databaseRecord(_ name: String, in txn: Transaction) throws -> DatabaseRecord? {
        guard let bytes = try txn.get(.main, key: Array(name.utf8)), bytes.count >= DatabaseRecord.size else {
            return nil
        }
        return DatabaseRecord(Array(bytes), at: 0)
    }
}
