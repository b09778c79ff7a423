extension CommitQueue {
    /// What a request sees while it runs: the transaction and the batch's clock, the changes it publishes and logs,
    /// and what runs once the transaction commits (``onCommit(_:)``) or does not (``onAbort(_:)``).
    final class Context {
        var txn: Transaction
        /// The batch's timestamp in ns since 1970; strictly increasing from batch to batch.
        var now: Int64 { leaseNow.wall }
        /// The batch's moment as leases tell it: ``now`` and the host's boot time then.
        let leaseNow: LeaseMoment
        let environment: Environment
        var changes: [PublishedChange] = []
        var afterCommit: [() -> Void] = []
        /// What undoes, in reverse order, the changes this transaction's requests made outside it (``onAbort(_:)``).
        private var rollbacks: [() -> Void] = []
        /// The owners that took their rollback point in this transaction (``onAbort(once:_:)``).
        private var rollbackOwners: Set<ObjectIdentifier> = []
        /// What this transaction writes to the change log.
        var logged: [ChangeLog.Pending] = []
        /// The lease entries this transaction put, each with the number of changes logged before it: only the
        /// changes after it void it (``LeaseBook/void(_:txn:sparing:)``).
        var leasesPut: [[UInt8]: Int] = [:]
        /// The change-log sequence numbers the commit wrote, once appended.
        var loggedSequences: ClosedRange<UInt64>?
        /// Set when a write of this request met `MDB_MAP_FULL`, even if the caller's closure caught it.
        var metMapFull = false
        /// Whether this transaction replays requests after the map grew for them below `maxMapSize` (never in the
        /// map's reserve), the one replay in which a `write { }` body runs again (``WriteBodyRun``).
        var mapGrewForReplay = false
        /// Whether this transaction runs in the map's reserve (it may commit only if the store does not grow): work
        /// that can wait, as folding the reads noted for eviction, waits for a later commit.
        var inReserve = false
        /// Another error of LMDB a closure met (and may have caught): the transaction is aborted, not committed.
        var storeError: LMDBError?
        /// The numbers of the types whose payloads this commit resized without a save (migration write-backs):
        /// the evictor keeps their limits too.
        var resizedTypes: Set<UInt32> = []
        /// Records this commit wrote without logging them (a shared tier's fill of a local miss), by type: the
        /// limits are kept for their types as for a save, and they are evicted last.
        var filled: [UInt32: Set<[UInt8]>] = [:]
        /// The store's `maxBytes` limit, which no one record may exceed (``Evictor/refuseOversized(_:size:schema:context:)``).
        var storeMaxBytes: Int?

        /// The load-through leases, for a delete of a missing id to void (see ``LeaseBook``).
        var leases: LeaseBook?
        private let hub: any CommitListener
        private var observed: [ExactName: Bool] = [:]
        /// The types this transaction wrote while nobody observed them (see ``changesAfterCommit()``).
        private var unpublished: Set<ExactName> = []

        init(txn: Transaction, now: LeaseMoment, environment: Environment, hub: any CommitListener) {
            self.txn = txn
            leaseNow = now
            self.environment = environment
            self.hub = hub
        }

        /// Whether anyone observes `typeName` (asked once per transaction): writers skip building
        /// changes nobody will read.
        func isObserved(_ typeName: String) -> Bool {
            let answer: Bool
            let name = ExactName(typeName)
            if let known = observed[name] {
                answer = known
            } else {
                answer = hub.hasSubscribers(typeName)
                observed[name] = answer
            }
            if !answer { unpublished.insert(name) }
            return answer
        }

        /// Records a change to publish after the commit.
        func publish(_ change: PublishedChange) { changes.append(change) }

        /// The changes to publish once the transaction has committed: those recorded, and `.touched` for each
        /// type that had no subscriber when this transaction first wrote it but has one now. An observer (a live
        /// query, `updates(of:id:)`, a load's watch) subscribes, then reads its first snapshot; when that read
        /// came before this commit, the observer would otherwise never hear of the change.
        func changesAfterCommit() -> [PublishedChange] {
            var all = changes
            for name in unpublished.sorted() where hub.hasSubscribers(name.name) {
                all.append(PublishedChange(typeName: name.name, kind: .touched))
            }
            return all
        }

        /// Records a change in the change log, in this transaction (whether anyone observes it or not).
        func log(
            _ schema: TypeSchema, _ kind: ChangeLog.Kind, id: [UInt8], keepsLease: Bool = false,
            recordStays: Bool = false
        ) {
            logged.append(
                ChangeLog.Pending(
                    type: schema.number, kind: kind, id: id, keepsLease: keepsLease, recordStays: recordStays))
        }

        /// Voids a load of the record `id` of `schema` under way, for a write of that id no logged change names
        /// (``LeaseBook/void(_:now:txn:leavesRecord:)``; `leavesRecord`: a record of the id stays, as after a new
        /// expiry, where a delete of a missing record leaves none); returns whether there was a lease to void.
        func voidLease(_ schema: TypeSchema, id: [UInt8], leavesRecord: Bool) throws -> Bool {
            try leases?.void(
                LeaseBook.key(type: schema.number, id: id), now: leaseNow, txn: txn, leavesRecord: leavesRecord)
                == true
        }

        /// Records that records of `schema` changed in a way no change stream describes (a new expiry, a record that
        /// left another tier): live queries here and in other processes rerun, change streams stay silent.
        func touch(_ schema: TypeSchema, id: [UInt8]) {
            log(schema, .touched, id: id)
            publish(PublishedChange(typeName: schema.name, kind: .touched, recordKey: id))
        }

        /// Runs `body` after the transaction commits (never if it aborts).
        func onCommit(_ body: @escaping () -> Void) { afterCommit.append(body) }

        /// Runs `body` if the transaction does not commit: before its requests run again (a peer threw, the map
        /// grew) or fail. For state a request changes outside the transaction while it runs (later work in the
        /// same transaction reads it), which must not outlive an attempt that left nothing in the store.
        func onAbort(_ body: @escaping () -> Void) { rollbacks.append(body) }

        /// ``onAbort(_:)`` once per transaction for `owner`: `makeRollback` runs only at the owner's first call,
        /// before it changes anything, and returns what restores what it saw then.
        func onAbort(once owner: AnyObject, _ makeRollback: () -> () -> Void) {
            guard rollbackOwners.insert(ObjectIdentifier(owner)).inserted else { return }
            rollbacks.append(makeRollback())
        }

        /// Undoes what the requests of this aborted transaction changed outside it (``onAbort(_:)``), newest first.
        func rollBack() {
            let undo = rollbacks
            rollbacks = []
            rollbackOwners = []
            for body in undo.reversed() { body() }
        }

        /// Aborts this context's nested transaction alone, and undoes what its request changed outside it.
        func abortNested() {
            txn.abortNested()
            rollBack()
        }

        /// A context for a transaction nested in this one, with the same clock and observers.
        func nested(_ child: Transaction) -> Context {
            let child = Context(txn: child, now: leaseNow, environment: environment, hub: hub)
            child.storeMaxBytes = storeMaxBytes
            child.mapGrewForReplay = mapGrewForReplay
            child.inReserve = inReserve
            child.leases = leases
            return child
        }

        /// Takes over the changes and hooks of a nested context whose transaction committed into this one.
        func absorb(_ child: Context) {
            changes += child.changes
            unpublished.formUnion(child.unpublished)
            afterCommit += child.afterCommit
            rollbacks += child.rollbacks
            for (key, position) in child.leasesPut { leasesPut[key] = logged.count + position }
            logged += child.logged
            resizedTypes.formUnion(child.resizedTypes)
            filled.merge(child.filled) { $0.union($1) }
        }
    }
}
