import Foundation

/// A record older than its type's current version, migrated in memory on read.
extension RecordDecoding {
    /// Runs the chain of steps from the record's version to `current` on its JSON, then decodes.
    static func migrate<T: LocalStorable>(
        _ type: T.Type, view: RecordView, id: String, to current: Int,
        steps: [StorageMigration], sealing: PayloadSealing? = nil
    ) throws -> T {
        let start = view.version
        var json: Data
        let readsNonFinite: Bool
        let opened = try payload(of: view, typeName: T.storageName, id: id, sealing: sealing).bytes
        do {
            (json, readsNonFinite) = try opened.withUnsafeBytes {
                try PayloadCodec.migrationJSON(from: $0, format: view.format)
            }
        } catch {
            throw LocalStorageError.decodingFailed(reason: "\(T.self) \"\(id)\": \(error)")
        }
        var version = start
        while version < current {
            // The step that fits: one that goes past the current version belongs to a later chain.
            guard let step = steps.first(where: { $0.from == version && $0.to > version && $0.to <= current }) else {
                let past = steps.first { $0.from == version && $0.to > current }
                throw LocalStorageError.migrationFailed(
                    from: version, to: current,
                    underlying: past.map {
                        MigrationChainError.stepPastCurrent(from: version, past: $0.to, to: current)
                    }
                        ?? MigrationChainError.missingStep(from: version, to: current))
            }
            do {
                json = try step.transform(json)
            } catch {
                throw LocalStorageError.migrationFailed(from: step.from, to: step.to, underlying: error)
            }
            version = step.to
        }
        let value: T
        do {
            value = try PayloadCodec.migrationDecoder(readingNonFinite: readsNonFinite).decode(T.self, from: json)
        } catch {
            throw LocalStorageError.migrationFailed(from: start, to: current, underlying: error)
        }
        let migratedID = try value.storageID()
        // By bytes: a record is keyed by its id's UTF-8, and `==` would take a canonically equivalent id for it.
        guard migratedID.utf8.elementsEqual(id.utf8) else {
            throw LocalStorageError.migrationFailed(
                from: start, to: current, underlying: MigrationChainError.changedID(stored: id, migrated: migratedID))
        }
        return value
    }
}
