/// A tier above the local store that makes a load through the cache run once among every instance on it
/// (the shared tier, ``SharedTierRecordStore``). ``LoadThrough`` asks it first for the record, and hands it
/// the load once this store's own lease is taken.
protocol LoadCoordinator: Sendable {
    /// The record `id` as the tier holds it, read before the local store and its leases are looked at.
    nonisolated(nonsending) func fetchBeforeLoading<T: LocalStorable>(
        _ type: T.Type, id: String, schema: TypeSchema
    ) async throws -> T?

    /// Waits until the local store may answer for the tier (caught up after an open or an outage), or
    /// throws once it has been away longer than it may serve local records: the gate of every shared read,
    /// for a look at the local store alone (a policy with `refreshAfter` reads the record's update time there).
    nonisolated(nonsending) func settle() async throws

    /// Runs `request` once among the instances, under the local lease the request holds, which it gives
    /// back (or which the record's commit voids) before returning.
    func load<T: LocalStorable>(_ request: LeasedLoad<T>) async throws -> T?
}

/// One load through the cache whose caller holds this store's lease (``LeaseBook``) under `token`.
struct LeasedLoad<T: LocalStorable>: Sendable {
    /// The steps the load shares with a load on this store alone (leases, looks, encoding).
    let through: LoadThrough
    let id: T.ID
    /// The id as stored, and its key.
    let name: String
    let key: [UInt8]
    let leaseKey: [UInt8]
    let token: UInt64
    let schema: TypeSchema
    let policy: LoadPolicy
    /// The update time of the record being reloaded behind a stale read (nil: a load of a missing record).
    let refreshing: RefreshedRecordStamp?
    /// When the flight running the load is given up (the clock's uptime): this store's lease ends then.
    let givenUpAt: Duration
    let load: @Sendable (T.ID) async throws -> T?

    /// Gives back this store's lease after a failed or overtaken load (``LoadThrough/giveBack(_:token:key:schema:)``).
    func giveBack() async { await through.giveBack(leaseKey, token: token, key: key, schema: schema) }
}
