/// The tiers a store opens, chosen once from its configuration: the local store, the memory tier over it
/// (``LocalStorageConfiguration/memoryCache``) and the shared tier over those
/// (``LocalStorageConfiguration/sharedTier``). The public methods go through ``top``.
struct TierStack: Sendable {
    /// The layer a public method calls (``RecordStore``).
    let top: any RecordStore
    /// The bottom layer, with what every read shares (decode sessions, follow-ups).
    let local: LocalRecordStore
    let memoryTier: MemoryTier?
    let sharedTier: SharedTier?

    /// Opens the tiers `configuration` asks for over `core`.
    ///
    /// - Throws: `openFailed` for memory-cache bounds below 1; `sharedTierUnavailable` for a shared-tier URL
    ///   or namespace that cannot work.
    init(configuration: LocalStorageConfiguration, core: StoreCore) throws {
        let local = LocalRecordStore(core: core, configuration: configuration)
        let memoryTier = try MemoryTierRecordStore.makeTier(configuration, core: core)
        let sharedTier = try configuration.sharedTier.map {
            try SharedTier(settings: $0, core: core, logger: configuration.logger)
        }
        var top: any RecordStore = local
        if let memoryTier { top = MemoryTierRecordStore(local: local, tier: memoryTier) }
        if let sharedTier { top = SharedTierRecordStore(base: top, local: local, tier: sharedTier) }
        (self.top, self.local, self.memoryTier, self.sharedTier) = (top, local, memoryTier, sharedTier)
    }
}
