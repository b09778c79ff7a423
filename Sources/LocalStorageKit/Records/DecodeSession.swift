import Foundation
import Synchronization

/// What one read decoded: a decode counter and the records it migrated, to write back afterwards.
final class DecodeSession {
    let counter: DecodeCounter?
    let format: PayloadFormat
    let logger: (any StorageLogger)?
    /// The version the decoded type writes, when the caller knows it (saves a conformance lookup).
    let currentVersion: Int?
    private(set) var upgrades: [RecordUpgrade] = []

    init(
        counter: DecodeCounter?, format: PayloadFormat, logger: (any StorageLogger)? = nil,
        currentVersion: Int? = nil
    ) {
        self.counter = counter
        self.format = format
        self.logger = logger
        self.currentVersion = currentVersion
    }

    /// Decodes one row of a listing or query (never nil: the optional keeps callers' shapes).
    ///
    /// - Throws: `decodingFailed` naming the type and the id when the record's header or payload cannot
    ///   be read, or `migrationFailed`: a read that meets a damaged record says so, as
    ///   ``LocalStorage/fetch(_:id:)`` does, instead of leaving it out.
    func decodeRow<T: LocalStorable>(
        _ type: T.Type, bytes: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer
    )
        throws -> T?
    {
        let key = id
        let id = String(decoding: id, as: UTF8.self)
        let view = try RecordDecoding.view(of: bytes, T.self, id: id, fixedPartOnly: true)
        let value = try RecordDecoding.decode(T.self, view: view, id: id, session: self)
        RowVersions.current?.note(id: key, updatedAt: view.updatedAt)
        return value
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
            logger?.log(
                level: .warning,
                message: "Could not re-encode a migrated record; it stays at version \(view.version)",
                metadata: ["type": T.storageName, "id": id, "error": "\(error)"])
            return
        }
        upgrades.append(
            RecordUpgrade(
                key: key, fromVersion: view.version, updatedAt: view.updatedAt,
                payload: payload, format: format, version: T.storageVersion,
                indexValues: value.indexValuesForStorage))
    }
}
