import Foundation
import Synchronization

/// Turns a stored record into a value: runs migrations for older versions, then decodes.
enum RecordDecoding {
    /// Decodes the record's payload as `T`, migrating it in memory first when it is older than
    /// `T`'s current version. A migrated record is noted in `session` so the caller can write it back.
    ///
    /// - Throws: `decodingFailed` naming the type and id, or `migrationFailed`.
    static func decode<T: LocalStorable>(
        _ type: T.Type, view: RecordView, id: String,
        session: DecodeSession? = nil
    ) throws -> T {
        session?.counter?.increment()
        let current = session?.currentVersion ?? T.storageVersion
        if view.version > current {
            throw LocalStorageError.decodingFailed(
                reason: "\(T.self) \"\(id)\" is stored at version \(view.version), newer than its current version "
                    + "\(current): it was written by a newer version of the app and is left untouched")
        }
        if view.version < current, let versioned = T.self as? any LocalStorageVersioned.Type {
            let value = try migrate(T.self, view: view, id: id, to: current, steps: versioned.migrations)
            session?.noteUpgrade(of: value, view: view, id: id)
            return value
        }
        do {
            return try PayloadCodec.decode(T.self, from: view.payload, format: view.format)
        } catch {
            throw LocalStorageError.decodingFailed(reason: "\(T.self) \"\(id)\": \(error)")
        }
    }

    /// Validates a stored record's header; a damaged one is a `decodingFailed` naming the type and id.
    static func view<T>(
        of bytes: UnsafeRawBufferPointer, _ type: T.Type, id: String, fixedPartOnly: Bool = false
    )
        throws(LocalStorageError) -> RecordView
    {
        do {
            return try fixedPartOnly ? RecordView(fixedPartOf: bytes) : RecordView(bytes)
        } catch {
            guard case .decodingFailed(let reason) = error else { throw error }
            throw .decodingFailed(reason: "\(T.self) \"\(id)\": \(reason)")
        }
    }

    /// Runs the chain of steps from the record's version to `current` on its JSON, then decodes.
    static func migrate<T: LocalStorable>(
        _ type: T.Type, view: RecordView, id: String, to current: Int,
        steps: [StorageMigration]
    ) throws -> T {
        let start = view.version
        var json: Data
        do {
            json = try PayloadCodec.json(from: view.payload, format: view.format)
        } catch {
            throw LocalStorageError.decodingFailed(reason: "\(T.self) \"\(id)\": \(error)")
        }
        var version = start
        while version < current {
            guard let step = steps.first(where: { $0.from == version }), step.to > version, step.to <= current else {
                throw LocalStorageError.migrationFailed(
                    from: version, to: current, underlying: MigrationChainError.missingStep(from: version, to: current))
            }
            do {
                json = try step.transform(json)
            } catch {
                throw LocalStorageError.migrationFailed(from: step.from, to: step.to, underlying: error)
            }
            version = step.to
        }
        do {
            return try JSONDecoder().decode(T.self, from: json)
        } catch {
            throw LocalStorageError.migrationFailed(from: start, to: current, underlying: error)
        }
    }
}
