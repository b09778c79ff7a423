import Foundation
import Synchronization

/// Turns a stored record into a value: runs migrations for older versions, then decodes.
enum RecordDecoding {
    /// Decodes the record's payload as `T`, migrating it in memory first when it is older than
    /// `T`'s current version. A migrated record is noted in `session` so the caller can write it back.
    ///
    /// - Throws: `decodingFailed` naming the type and id, or `migrationFailed`.
    static func decode<T: LocalStorable>(_ type: T.Type, view: RecordView, id: String,
                                         session: DecodeSession? = nil) throws -> T {
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
    static func view<T>(of bytes: UnsafeRawBufferPointer, _ type: T.Type, id: String, fixedPartOnly: Bool = false)
        throws(LocalStorageError) -> RecordView {
        do {
            return try fixedPartOnly ? RecordView(fixedPartOf: bytes) : RecordView(bytes)
        } catch {
            guard case .decodingFailed(let reason) = error else { throw error }
            throw .decodingFailed(reason: "\(T.self) \"\(id)\": \(reason)")
        }
    }

    /// Runs the chain of steps from the record's version to `current` on its JSON, then decodes.
    static func migrate<T: LocalStorable>(_ type: T.Type, view: RecordView, id: String, to current: Int,
                                          steps: [StorageMigration]) throws -> T {
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

/// Why a migration chain could not run.
public enum MigrationChainError: Error, Sendable, CustomStringConvertible {
    /// No step starts at `from` on the way to `to`.
    case missingStep(from: Int, to: Int)

    public var description: String {
        switch self {
        case .missingStep(let from, let to): "no migration step from version \(from) on the way to \(to)"
        }
    }
}

/// Checks a type's migration steps once, when the type is first used: duplicates and gaps are reported
/// through the logger (and fail on use with `migrationFailed`).
enum MigrationValidator {
    static func problems(steps: [StorageMigration], current: Int) -> [String] {
        var problems: [String] = []
        let starts = Dictionary(grouping: steps, by: \.from)
        for (from, group) in starts where group.count > 1 {
            problems.append("\(group.count) steps start at version \(from)")
        }
        for step in steps where step.to <= step.from || step.to > current {
            problems.append("step \(step.from) → \(step.to) does not move towards version \(current)")
        }
        if let lowest = steps.map(\.from).min() {
            var version = lowest
            while version < current {
                guard let step = starts[version]?.first, step.to > version else {
                    problems.append("no step from version \(version)")
                    break
                }
                version = step.to
            }
        }
        return problems
    }
}

/// What one read decoded: a decode counter and the records it migrated, to write back afterwards.
final class DecodeSession {
    let counter: DecodeCounter?
    let format: PayloadFormat
    let logger: (any StorageLogger)?
    /// The version the decoded type writes, when the caller knows it (saves a conformance lookup).
    let currentVersion: Int?
    private(set) var upgrades: [RecordUpgrade] = []

    init(counter: DecodeCounter?, format: PayloadFormat, logger: (any StorageLogger)? = nil,
         currentVersion: Int? = nil) {
        self.counter = counter
        self.format = format
        self.logger = logger
        self.currentVersion = currentVersion
    }

    /// Decodes one row of a listing or query. A damaged row (header or payload that does not decode, or
    /// a failing migration) is skipped and logged, so one bad record cannot hide the others; fetching it
    /// by id reports the error.
    func decodeRow<T: LocalStorable>(_ type: T.Type, bytes: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer)
        throws -> T? {
        let id = String(decoding: id, as: UTF8.self)
        do {
            let view = try RecordDecoding.view(of: bytes, T.self, id: id, fixedPartOnly: true)
            return try RecordDecoding.decode(T.self, view: view, id: id, session: self)
        } catch let error as LocalStorageError {
            logger?.log(level: .error, message: "Skipped a record that does not decode",
                        metadata: ["type": T.storageName, "id": id, "error": "\(error)"])
            return nil
        }
    }

    /// Notes a record a read migrated, to write back at its new version. When the migrated value does not
    /// encode, the record is left at its old version (it migrates again on the next read) and the failure is
    /// logged.
    func noteUpgrade<T: LocalStorable>(of value: T, view: RecordView, id: String) {
        let payload: [UInt8]
        let key: [UInt8]
        do {
            payload = try PayloadCodec.encode(value, as: format)
            key = try RecordWriter.key(for: id)
        } catch {
            logger?.log(level: .warning,
                        message: "Could not re-encode a migrated record; it stays at version \(view.version)",
                        metadata: ["type": T.storageName, "id": id, "error": "\(error)"])
            return
        }
        upgrades.append(RecordUpgrade(key: key, fromVersion: view.version, updatedAt: view.updatedAt,
                                      payload: payload, format: format, version: T.storageVersion,
                                      indexValues: value.indexValuesForStorage))
    }
}

/// A record migrated in memory by a read, to store at its new version.
struct RecordUpgrade: Sendable {
    let key: [UInt8]
    let fromVersion: Int
    let updatedAt: Int64
    let payload: [UInt8]
    let format: PayloadFormat
    let version: Int
    let indexValues: [StoredIndexValue]
}

/// Counts payload decodes (tests check that queries decode only the rows they return).
final class DecodeCounter: Sendable {
    private let count = Atomic<Int>(0)

    func increment() { count.add(1, ordering: .relaxed) }

    var value: Int { count.load(ordering: .relaxed) }
}
