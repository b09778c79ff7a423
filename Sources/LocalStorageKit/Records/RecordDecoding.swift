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
                reason:
                    "\(T.namedForErrors) \"\(id)\" is stored at version \(view.version), newer than its current version "
                    + "\(current): it was written by a newer version of the app and is left untouched")
        }
        if view.version < current, let versioned = T.self as? any LocalStorageVersioned.Type {
            let value: T
            do {
                value = try migrate(
                    T.self, view: view, id: id, to: current, steps: versioned.migrations, sealing: session?.sealing)
            } catch {
                // `migrationFailed` names versions, not the record: a query over many records says which one here,
                // so that it can be found (and deleted, or the step fixed).
                session?.logger?.log(
                    level: .warning, message: "A record could not be migrated",
                    metadata: [
                        "type": session?.typeName ?? T.storageName, "id": id, "version": "\(view.version)",
                        "error": "\(error)",
                    ])
                throw error
            }
            session?.noteUpgrade(of: value, view: view, id: id)
            return value
        }
        do {
            // A payload stored as the codec wrote it is decoded in place; a sealed or compressed one is
            // opened first (and resealed by the writer when an old key sealed it). In an encrypted store every
            // payload is sealed: the sealing refuses one that is not.
            guard !view.envelope.isEmpty || session?.sealing?.holdsOnlySealed == true else {
                return try PayloadCodec.decode(T.self, from: view.payload, format: view.format)
            }
            let typeName = session?.typeName ?? T.storageName
            guard let sealing = session?.sealing else { throw unopenable(typeName: typeName, id: id) }
            // Decoded where it was opened, without a copy; kept only when an old key sealed it. (No tuple is
            // returned: the metadata of a generic tuple is looked up in the runtime at every call.)
            var reseal: [UInt8]?
            let value = try sealing.withPayload(of: view, typeName: typeName, id: id) { bytes, resealable in
                if resealable { reseal = Array(bytes) }
                return try PayloadCodec.decode(T.self, from: bytes, format: view.format)
            }
            if let reseal { session?.noteReseal(view: view, id: id, payload: reseal) }
            return value
        } catch let error as LocalStorageError {
            throw error
        } catch {
            throw LocalStorageError.decodingFailed(reason: "\(T.self) \"\(id)\": \(error)")
        }
    }

    /// The codec's bytes of a sealed or compressed payload, and whether a previous key sealed it.
    ///
    /// - Throws: `decodingFailed` naming the type and id when it does not open, or when the store was opened
    ///   without the means to open it.
    static func payload(
        of view: RecordView, typeName: String, id: String, sealing: PayloadSealing?
    ) throws -> (bytes: [UInt8], resealable: Bool) {
        guard let sealing else {
            if view.envelope.isEmpty { return (Array(view.payload), false) }
            throw unopenable(typeName: typeName, id: id)
        }
        return try sealing.withPayload(of: view, typeName: typeName, id: id) { (Array($0), $1) }
    }

    /// The error for a sealed or compressed payload read without the store's means to open it.
    private static func unopenable(typeName: String, id: String) -> LocalStorageError {
        .decodingFailed(reason: "\(typeName) \"\(id)\": its payload is sealed or compressed and this read has no key")
    }

    /// Validates a stored record's header; a damaged one is a `decodingFailed` naming the type and id. With
    /// `sharedTier`, the bytes are the shared tier's, which must have a named header
    /// (``RecordView/init(sharedTierRecord:fixedPartOnly:)``).
    static func view<T>(
        of bytes: UnsafeRawBufferPointer, _ type: T.Type, id: String, fixedPartOnly: Bool = false,
        sharedTier: Bool = false
    )
        throws(LocalStorageError) -> RecordView
    {
        try view(of: bytes, typeName: "\(T.self)", id: id, fixedPartOnly: fixedPartOnly, sharedTier: sharedTier)
    }

    /// ``view(of:_:id:fixedPartOnly:sharedTier:)`` naming the type by `typeName`.
    static func view(
        of bytes: UnsafeRawBufferPointer, typeName: String, id: String, fixedPartOnly: Bool = false,
        sharedTier: Bool = false
    )
        throws(LocalStorageError) -> RecordView
    {
        do {
            if sharedTier { return try RecordView(sharedTierRecord: bytes, fixedPartOnly: fixedPartOnly) }
            return try fixedPartOnly ? RecordView(fixedPartOf: bytes) : RecordView(bytes)
        } catch {
            guard case .decodingFailed(let reason) = error else { throw error }
            throw .decodingFailed(reason: "\(typeName) \"\(id)\": \(reason)")
        }
    }
}

extension LocalStorable {
    /// The type as an error names it: its Swift name, and the storage name the store and the CLI know it by when
    /// that differs (a write's error, which has the storage name only, names the same type).
    static var namedForErrors: String {
        let swiftName = "\(Self.self)"
        return swiftName == storageName ? swiftName : "\(swiftName) (storageName \"\(storageName)\")"
    }
}
