import Foundation

/// A record's metadata as its header stores it: what `list` shows, and an export line without its payload.
///
/// Timestamps are nanoseconds since 1970, exactly as stored.
@_spi(Maintenance) public struct RecordSummary: Codable, Sendable, Equatable {
    /// The type's storage name.
    public var type: String
    /// The record id.
    public var id: String
    /// When the record was first saved (ns since 1970).
    public var createdAt: Int64
    /// When the record was last saved (ns since 1970).
    public var updatedAt: Int64
    /// When the record expires (ns since 1970); nil when it never does.
    public var expiresAt: Int64?
    /// The schema version the payload is stored at.
    public var version: Int
    /// The payload format: `"json"` or `"binary"`.
    public var format: String
    /// The signature of the index declaration the record was indexed with.
    public var signature: UInt64
    /// The record's index values by index name.
    public var indexes: [String: MaintenanceIndexValue]
    /// The payload size in bytes (listings only; exports leave it out).
    public var sizeInBytes: Int?
    /// Whether the record had expired when it was read (listings only; exports leave it out).
    public var isExpired: Bool?

    /// The summary of a record read from the store; `now` (ns) adds the listing-only fields. `info` (the type's
    /// description) names a compact header's declaration and index values.
    ///
    /// - Throws: `decodingFailed` when a compact header names a declaration or slot that `info` lacks.
    init(type: String, id: String, view: RecordView, now: Int64?, info: TypeInfo) throws(LocalStorageError) {
        self.type = type
        self.id = id
        createdAt = view.createdAt
        updatedAt = view.updatedAt
        expiresAt = view.expiresAt == 0 ? nil : view.expiresAt
        version = view.version
        format = view.format.name
        let header: RecordHeader
        do {
            header = try view.header(describedBy: info)
        } catch let error as LocalStorageError {
            guard case .decodingFailed(let reason) = error else { throw error }
            throw .decodingFailed(reason: "\(type) \"\(id)\": \(reason)")
        } catch {
            throw .decodingFailed(reason: "\(type) \"\(id)\": \(error)")
        }
        signature = header.signature
        var indexes: [String: MaintenanceIndexValue] = [:]
        for value in header.indexValues {
            indexes[value.name] = value.bytes.withUnsafeBytes { MaintenanceIndexValue(kind: value.kind, stored: $0) }
        }
        self.indexes = indexes
        if let now {
            sizeInBytes = view.payload.count
            isExpired = view.isExpired(at: now)
        }
    }
}

/// One record in full: its metadata and its payload as JSON, whatever codec wrote it.
@_spi(Maintenance) public struct RecordDetail: Sendable {
    /// The record's metadata.
    public var summary: RecordSummary
    /// The payload as JSON bytes: its JSON view, where NaN and ±Infinity (which JSON numbers cannot hold)
    /// are the strings `"NaN"`, `"Infinity"` and `"-Infinity"`.
    public var payload: Data
    /// The stored binary payload, when ``payload`` cannot restore it byte for byte (it held a non-finite
    /// number, or a float holding a whole number); nil otherwise.
    public var exactPayload: Data?

    /// The record as one line of JSON: the summary's fields, then `"binaryPayload"` (Base64 of
    /// ``exactPayload``, when there is one and `includingExactPayload` is true), then `"payload"` holding
    /// the payload JSON verbatim.
    ///
    /// This is the line format of ``StoreMaintenance/export(types:to:progress:)``.
    /// - Throws: `encodingFailed` if the summary cannot be encoded.
    public func jsonLine(includingExactPayload: Bool = true) throws -> Data {
        var members: [(String, Data)] = []
        if includingExactPayload, let exactPayload {
            members.append((RecordDetail.exactPayloadKey, Data("\"\(exactPayload.base64EncodedString())\"".utf8)))
        }
        members.append(("payload", payload))
        return try JSONText.object(summary, appending: members)
    }

    /// The export member that carries a binary payload the JSON view cannot restore.
    static let exactPayloadKey = "binaryPayload"
}

extension PayloadFormat {
    /// `"json"` or `"binary"`.
    var name: String {
        switch self {
        case .json: "json"
        case .binary: "binary"
        }
    }

    /// The format spelled `name`, or nil.
    init?(name: String) {
        switch name {
        case "json": self = .json
        case "binary": self = .binary
        default: return nil
        }
    }
}
