import Foundation

/// Compaction at open (``LocalStorageConfiguration/compaction``): what the store asks of its environment,
/// and what it logs.
extension StoreCore {
    /// The compaction `configuration` asks for, nil for none (an in-memory store never compacts). Each
    /// stage of a compaction is logged at debug level with its name in the `step` metadata.
    static func compactionRequest(
        _ configuration: LocalStorageConfiguration, _ directory: URL
    ) -> Environment.CompactionRequest? {
        guard !configuration.isInMemory, let threshold = configuration.compaction.freeFraction else { return nil }
        let logger = configuration.logger
        let path = directory.path
        var request = Environment.CompactionRequest(threshold: threshold) { step in
            logger?.log(
                level: .debug, message: "Compacting the store: \(step)", metadata: ["path": path, "step": step])
        }
        request.entryChecks = compactionEntryChecks(encryption: configuration.encryption)
        return request
    }

    /// What a compaction checks in the store, under the lock it compacts with, before it copies: the layout
    /// marker and the store's identity as an open reads them, and the key check value against `encryption` (a store an open would refuse
    /// is never rewritten). A key for a store without a check value is refused unless `takingAKeyWithoutACheck`
    /// (the maintenance tool compacts a plain store given a key; an app's open may seal with it).
    static func compactionEntryChecks(
        encryption: StorageEncryption?, takingAKeyWithoutACheck: Bool = false
    ) -> [Environment.EntryCheck] {
        [
            Environment.EntryCheck(database: TypeRegistry.metaName, key: TypeRegistry.layoutKey) {
                TypeRegistry.compactionRefusal(marker: $0)
            },
            Environment.EntryCheck(database: TypeRegistry.metaName, key: ChangeLog.identityKey) {
                ChangeLog.identityRefusal($0)
            },
            Environment.EntryCheck(database: TypeRegistry.metaName, key: PayloadSealing.checkKey) { stored in
                if stored == nil && takingAKeyWithoutACheck && encryption?.problem == nil { return nil }
                return PayloadSealing.refusal(storedCheck: stored, encryption: encryption)
            },
        ]
    }

    /// Logs what compaction at open did: a compaction and a failure always, a skip and no need at debug level.
    static func log(_ outcome: CompactionOutcome, logger: (any StorageLogger)?, directory: URL) {
        guard let logger else { return }
        let path = directory.path
        switch outcome {
        case .notNeeded(let fraction):
            logger.log(
                level: .debug, message: "Compaction not needed",
                metadata: ["path": path, "freeFraction": fraction.formatted3])
        case .skipped(let fraction, let reason), .refused(let fraction, let reason):
            logger.log(
                level: .info, message: "Compaction skipped: \(reason)",
                metadata: ["path": path, "freeFraction": fraction.formatted3])
        case .failed(let fraction, let reason):
            logger.log(
                level: .warning, message: "Compaction failed, the store is unchanged: \(reason)",
                metadata: ["path": path, "freeFraction": fraction.formatted3])
        case .compacted(let fraction, let before, let after):
            logger.log(
                level: .info, message: "Compacted the store",
                metadata: [
                    "path": path, "freeFraction": fraction.formatted3, "bytesBefore": "\(before)",
                    "bytesAfter": "\(after)",
                ])
        }
    }
}

extension Double {
    /// The value with three decimals, for log metadata.
    fileprivate var formatted3: String { String(format: "%.3f", self) }
}
