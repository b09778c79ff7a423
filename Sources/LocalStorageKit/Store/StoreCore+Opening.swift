/// The first transaction of an open: `meta`, the change log, the layout, the store's identity and its sealing.
///
/// An open of a store that needs nothing written (one at this version's layout, with its identity and key
/// check value: every open after the first) reads all of it in a read transaction, so that it does not wait for
/// LMDB's write lock while another process is inside a long write (it waited for that process's whole batch, an
/// import, a rekey; trial93 #4). A new store, an upgrade, a key check value to write or to move to the current
/// key are written in a write transaction, as before.
extension StoreCore {
    /// What the open reads from the store.
    struct OpenState {
        let meta: Database
        let changeLog: ChangeLog
        let sealing: PayloadSealing
        /// Whether new records get the compact header (layout 4 or later).
        let writesCompactHeaders: Bool
    }

    /// Reads the open's state, in a read transaction when nothing needs writing and in a write transaction
    /// otherwise (whose checks then run again: another process may have written meanwhile).
    static func openState(
        _ environment: Environment, configuration: LocalStorageConfiguration, path: String
    ) throws -> OpenState {
        let read = try environment.readOpeningHandles { txn in
            try openState(txn: txn, environment: environment, configuration: configuration, path: path)
        }
        if let read { return read }
        return try environment.write { txn in
            guard
                let written = try openState(
                    txn: txn, environment: environment, configuration: configuration, path: path)
            else { throw LMDBError.notFound("mdb_dbi_open") }
            return written
        }
    }

    /// The open's state from `txn`; nil when `txn` is a read transaction and something needs writing.
    private static func openState(
        txn: Transaction, environment: Environment, configuration: LocalStorageConfiguration, path: String
    ) throws -> OpenState? {
        try TypeRegistry.refuseForeignEnvironment(txn: txn)
        let existing = try txn.openDatabase(TypeRegistry.metaName, create: false)
        // A store another process is creating has no `meta` until its commit, which the write waits for.
        if txn.isReadOnly, existing == nil { return nil }
        if configuration.requiresExistingStore, existing == nil { throw TypeRegistry.emptyEnvironmentRefusal }
        guard let meta = try existing ?? txn.openDatabase(TypeRegistry.metaName, create: !txn.isReadOnly),
            let changes = try ChangeLog.open(in: txn), let leases = try LeaseBook.open(in: txn)
        else {
            if txn.isReadOnly { return nil }
            throw LMDBError.notFound("mdb_dbi_open")
        }
        let target = configuration.upgradesLayoutAtMostTo ?? TypeRegistry.layout
        let mayUpgrade = { !configuration.keepsLayout && !environment.othersHaveItOpen() }
        if txn.isReadOnly {
            // An older layout, also one this open may not upgrade, is read in the write transaction: another
            // process may be upgrading it right now, and an open that read it before that commit would write
            // without what the upgrade brings (the count tree, the declaration counters).
            let layoutIsCurrent = try TypeRegistry.layoutIsCurrent(meta: meta, txn: txn)
            let hasIdentity = try txn.get(meta, key: ChangeLog.identityKey) != nil
            if !layoutIsCurrent || !hasIdentity { return nil }
        }
        let layout = try TypeRegistry.checkLayout(
            meta: meta, txn: txn, countTree: !configuration.withoutCountTree, upgradeTo: target,
            mayUpgrade: mayUpgrade)
        let store = try ChangeLog.identity(meta: meta, txn: txn)
        let sealing: PayloadSealing
        do {
            // The key is checked before any record is read.
            sealing = try PayloadSealing.open(
                encryption: configuration.encryption, compression: configuration.compression, meta: meta,
                txn: txn, path: path, readOnly: configuration.keepsKeyCheck,
                sealingPlainStore: configuration.sealsPlainStore,
                holdsRecords: { try TypeRegistry.holdsRecords(txn: txn) },
                storedDictionary: { id in try PayloadDictionaries.stored(id, meta: meta, in: environment) })
        } catch is PayloadSealing.WriteNeeded {
            return nil
        }
        return OpenState(
            meta: meta,
            changeLog: ChangeLog(
                database: changes, retention: configuration.changeLogRetention, store: store, leases: leases),
            sealing: sealing, writesCompactHeaders: layout >= TypeRegistry.compactHeadersLayout)
    }
}
