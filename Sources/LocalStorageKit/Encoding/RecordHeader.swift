/// The fixed layout in front of every stored payload (all integers little-endian).
///
/// ```
/// 0  UInt8   magic 0xA7
/// 1  UInt8   payload format (1 JSON, 2 binary)
/// 2  UInt16  header length: where the payload starts
/// 4  UInt32  schema version of the payload
/// 8  Int64   createdAt, ns since 1970
/// 16 Int64   updatedAt, ns since 1970
/// 24 Int64   expiresAt, ns since 1970 (0 = never)
/// 32 UInt64  signature of the index declaration the record was indexed with
/// 40 UInt16  number of index values, then for each:
///            UInt8 name length, name (UTF-8), UInt8 kind (1 string, 2 number),
///            UInt16 value length, value (a string's UTF-8, or a number's 11-byte ordered key)
/// …  payload
/// ```
/// Index values travel with the record so that an update or delete can remove the old index entries,
/// and a query can check a second condition, without decoding the payload.
struct RecordHeader: Equatable {
    static let magic: UInt8 = 0xA7
    static let fixedLength = 42

    var format: PayloadFormat
    var version: Int
    var createdAt: Int64
    var updatedAt: Int64
    var expiresAt: Int64
    var signature: UInt64
    var indexValues: [StoredIndexValue]

    /// Whether the record has expired at `now` (ns since 1970).
    func isExpired(at now: Int64) -> Bool { expiresAt != 0 && expiresAt <= now }

    /// Header bytes followed by `payload`.
    func serialized(payload: [UInt8]) throws(LocalStorageError) -> [UInt8] {
        var out = try bytes(reserving: payload.count)
        out.append(contentsOf: payload)
        return out
    }

    /// The header's bytes alone (its length field says where the payload starts), with room reserved
    /// for `payloadCount` more.
    func bytes(reserving payloadCount: Int = 0) throws(LocalStorageError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(RecordHeader.fixedLength + indexValues.count * 24 + payloadCount)
        out.append(RecordHeader.magic)
        out.append(format.rawValue)
        out.appendLittleEndian(UInt16(0))
        guard version >= 0, version <= Int(UInt32.max) else {
            throw .encodingFailed(reason: "schema version \(version) is out of range")
        }
        out.appendLittleEndian(UInt32(version))
        out.appendLittleEndian(createdAt)
        out.appendLittleEndian(updatedAt)
        out.appendLittleEndian(expiresAt)
        out.appendLittleEndian(signature)
        out.appendLittleEndian(UInt16(indexValues.count))
        for value in indexValues {
            let name = Array(value.name.utf8)
            guard name.count <= 255, value.bytes.count <= Int(UInt16.max) else {
                throw .encodingFailed(reason: "index \(value.name) name or value is too long")
            }
            out.append(UInt8(name.count))
            out.append(contentsOf: name)
            out.append(value.kind.rawValue)
            out.appendLittleEndian(UInt16(value.bytes.count))
            out.append(contentsOf: value.bytes)
        }
        guard out.count <= Int(UInt16.max) else {
            throw .encodingFailed(reason: "index values take \(out.count) bytes; the header holds at most 65535")
        }
        let length = UInt16(out.count)
        out[2] = UInt8(truncatingIfNeeded: length)
        out[3] = UInt8(truncatingIfNeeded: length >> 8)
        return out
    }
}

/// One index value as a record header stores it.
struct StoredIndexValue: Equatable, Sendable {
    let name: String
    let kind: IndexKind
    /// A string's UTF-8, or a number's 11-byte ordered key.
    let bytes: [UInt8]
}

/// The kind of values an index holds.
enum IndexKind: UInt8, Sendable, Codable {
    case string = 1
    case number = 2
}

/// Which codec wrote a payload.
enum PayloadFormat: UInt8, Sendable {
    case json = 1
    case binary = 2
}

/// A zero-copy view of a stored record: header fields read in place from the map.
///
/// Created with ``init(_:)``, which checks every length against the bytes, so later accessors cannot
/// read out of bounds. Valid only while the transaction that produced the bytes is open.
struct RecordView {
    let bytes: UnsafeRawBufferPointer
    let headerLength: Int
    let format: PayloadFormat

    /// Validates the header of `bytes`, index values included; throws `decodingFailed` for anything that
    /// is not a record. Write paths use this one, so a header they copy is whole.
    init(_ bytes: UnsafeRawBufferPointer) throws(LocalStorageError) {
        try self.init(fixedPartOf: bytes)
        try validateIndexValues()
    }

    /// Validates only the fixed part, for reads that decode the payload or look up one index value
    /// (``forEachIndexValue(_:)`` checks every length as it goes).
    init(fixedPartOf bytes: UnsafeRawBufferPointer) throws(LocalStorageError) {
        guard bytes.count >= RecordHeader.fixedLength, bytes[0] == RecordHeader.magic else {
            throw .decodingFailed(reason: "the stored bytes are not a LocalStorageKit record")
        }
        guard let format = PayloadFormat(rawValue: bytes[1]) else {
            throw .decodingFailed(reason: "unknown payload format \(bytes[1])")
        }
        let length = Int(bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self).littleEndian)
        guard length >= RecordHeader.fixedLength, length <= bytes.count else {
            throw .decodingFailed(reason: "the record header length \(length) is out of bounds")
        }
        self.bytes = bytes
        self.headerLength = length
        self.format = format
    }

    @inline(__always)
    private func load<I: FixedWidthInteger>(_ offset: Int, as type: I.Type) -> I {
        I(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: I.self))
    }

    var version: Int { Int(load(4, as: UInt32.self)) }
    var createdAt: Int64 { load(8, as: Int64.self) }
    var updatedAt: Int64 { load(16, as: Int64.self) }
    var expiresAt: Int64 { load(24, as: Int64.self) }
    var signature: UInt64 { load(32, as: UInt64.self) }
    var indexValueCount: Int { Int(load(40, as: UInt16.self)) }

    /// Whether the record has expired at `now` (ns since 1970).
    @inline(__always)
    func isExpired(at now: Int64) -> Bool {
        let expiresAt = self.expiresAt
        return expiresAt != 0 && expiresAt <= now
    }

    /// The payload bytes, in the map.
    var payload: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[headerLength...])
    }

    private func validateIndexValues() throws(LocalStorageError) {
        var offset = RecordHeader.fixedLength
        for _ in 0..<indexValueCount {
            guard offset + 1 <= headerLength else { throw RecordView.damaged }
            let nameLength = Int(bytes[offset])
            offset += 1 + nameLength
            guard offset + 3 <= headerLength, IndexKind(rawValue: bytes[offset]) != nil else {
                throw RecordView.damaged
            }
            let valueLength = Int(load(offset + 1, as: UInt16.self))
            offset += 3 + valueLength
            guard offset <= headerLength else { throw RecordView.damaged }
        }
    }

    private static var damaged: LocalStorageError { .decodingFailed(reason: "the record header is damaged") }

    /// Calls `body` with each stored index value (name bytes, kind, value bytes) until it returns false.
    /// Stops at the first entry that does not fit in the header (a damaged header never reads out of
    /// bounds).
    func forEachIndexValue(
        _ body: (UnsafeRawBufferPointer, IndexKind, UnsafeRawBufferPointer) throws -> Bool
    ) rethrows {
        var offset = RecordHeader.fixedLength
        for _ in 0..<indexValueCount {
            guard offset < headerLength else { return }
            let nameLength = Int(bytes[offset])
            guard offset + 1 + nameLength + 3 <= headerLength,
                  let kind = IndexKind(rawValue: bytes[offset + 1 + nameLength]) else { return }
            let name = UnsafeRawBufferPointer(rebasing: bytes[(offset + 1)..<(offset + 1 + nameLength)])
            offset += 1 + nameLength
            let valueLength = Int(load(offset + 1, as: UInt16.self))
            offset += 3
            guard offset + valueLength <= headerLength else { return }
            let value = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + valueLength)])
            offset += valueLength
            if try !body(name, kind, value) { return }
        }
    }

    /// The stored value of the index named `name` (as UTF-8 bytes), or nil when the record has none.
    func indexValue(named name: [UInt8]) -> (kind: IndexKind, value: UnsafeRawBufferPointer)? {
        var found: (IndexKind, UnsafeRawBufferPointer)?
        forEachIndexValue { candidate, kind, value in
            if candidate.elementsEqual(name) {
                found = (kind, value)
                return false
            }
            return true
        }
        return found
    }

    /// Copies the header out of the map.
    func header() -> RecordHeader {
        var values: [StoredIndexValue] = []
        values.reserveCapacity(indexValueCount)
        forEachIndexValue { name, kind, value in
            values.append(StoredIndexValue(name: String(decoding: name, as: UTF8.self), kind: kind,
                                           bytes: Array(value)))
            return true
        }
        return RecordHeader(format: format, version: version, createdAt: createdAt, updatedAt: updatedAt,
                            expiresAt: expiresAt, signature: signature, indexValues: values)
    }
}

extension Array where Element == UInt8 {
    /// Appends an integer's little-endian bytes.
    @inline(__always)
    mutating func appendLittleEndian<I: FixedWidthInteger>(_ value: I) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    /// Appends an integer's big-endian bytes (order-preserving for unsigned values).
    @inline(__always)
    mutating func appendBigEndian<I: FixedWidthInteger>(_ value: I) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
