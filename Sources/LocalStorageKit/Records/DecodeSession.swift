import Foundation
import Synchronization

/// What one read decoded: a decode counter and the records it migrated, to write back afterwards.
final class DecodeSession {
    let counter: DecodeCounter?
    let format: PayloadFormat
    let logger: (any StorageLogger)?
    /// The version the decoded type writes, when the caller knows it (saves a conformance lookup).
    let currentVersion: Int?
    /// Opens sealed and compressed payloads (the schema's ``TypeSchema/sealing``).
    let sealing: PayloadSealing?
    /// The storage name of the decoded type, when the caller knows it: a sealed payload is bound to it, and
    /// `T.storageName`'s default (`String(describing:)`) costs more than opening a small payload.
    let typeName: String?
    /// The schema's state that computes index values with the declaration it was registered with, for the
    /// records written back (every session that can write back has one: review-75 #1); nil: the declaration
    /// as it reads now.
    let indexing: SchemaRuntime?
    private(set) var upgrades: [RecordUpgrade] = []
    /// Notes each row decoded as a use of its record (a query read counts for eviction), when set.
    var noteUse: ((UnsafeRawBufferPointer) -> Void)?

    init(
        counter: DecodeCounter?, format: PayloadFormat, logger: (any StorageLogger)? = nil,
        currentVersion: Int? = nil, sealing: PayloadSealing? = nil, typeName: String? = nil,
        indexing: SchemaRuntime?
    ) {
        self.indexing = indexing
        self.sealing = sealing
        self.typeName = typeName
        self.counter = counter
        self.format = format
        self.logger = logger
        self.currentVersion = currentVersion
    }

    /// Decodes one row of a listing or query.
    ///
    /// Returns a `T`, not a `T?`: each `T?` made in a caller's loop would look up `Optional<T>`'s metadata in
    /// the runtime (this code is not specialized).
    ///
    /// - Throws: `decodingFailed` naming the type and the id when the record's header or payload cannot
    ///   be read, or `migrationFailed`: a read that meets a damaged record says so, as
    ///   ``LocalStorage/fetch(_:id:)`` does, instead of leaving it out.
    func decodeRow<T: LocalStorable>(
        _ type: T.Type, bytes: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer
    ) throws -> T {
        let key = id
        let id = String(decoding: id, as: UTF8.self)
        let view = try RecordDecoding.view(of: bytes, T.self, id: id, fixedPartOnly: true)
        let value = try RecordDecoding.decode(T.self, view: view, id: id, session: self)
        RowVersions.current?.note(id: key, updatedAt: view.updatedAt, payload: view.payload)
        noteUse?(key)
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
                indexValues: indexing?.indexValueComputer(for: T.self)(value) ?? value.indexValuesForStorage))
    }

    /// Notes a record a read opened with a previous key, to write back sealed with the current one (the
    /// same payload, version, declaration and index values).
    func noteReseal(view: RecordView, id: String, payload: [UInt8]) {
        let key: [UInt8]
        do {
            key = try RecordWriter.key(for: id)
        } catch {
            logger?.log(
                level: .warning, message: "Could not reseal a record with the current key",
                metadata: ["id": id, "error": "\(error)"])
            return
        }
        upgrades.append(
            RecordUpgrade(
                key: key, fromVersion: view.version, updatedAt: view.updatedAt, payload: payload,
                format: view.format, version: view.version, indexValues: nil))
    }
}
