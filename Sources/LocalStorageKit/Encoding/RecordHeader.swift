/// The header in front of every stored payload (all integers little-endian), in one of two layouts
/// (``RecordLayout``). The named layout:
///
/// ```
/// 0  UInt8   magic 0xA7
/// 1  UInt8   payload format (1 JSON, 2 binary), with the ``PayloadEnvelope`` flags in its high bits
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
///
/// The compact layout (store layout 4 and later; see docs/DESIGN.md, "The compact record header"):
///
/// ```
/// 0  UInt8   magic 0xA8
/// 1  UInt8   payload format and envelope flags, as above
/// 2  UInt16  header length: where the payload starts
/// 4  Int64   updatedAt, ns since 1970
/// 12 varint  expiry: 0 = never, else zigzag(expiresAt − updatedAt) + 1
/// …  varint  zigzag(updatedAt − createdAt), written in at least ``creationDistanceBytes`` bytes
/// …  varint  schema version
/// …  varint  number of the index declaration in the type's description (``TypeInfo/declarations``)
/// …  to the header's end, each index value: varint (slot number << 1 | 1 for a number), then a string's
///            varint length and UTF-8, or a number's 11-byte ordered key
/// …  payload
/// ```
/// Varints are LEB128 (7 bits a byte, low first). The slot numbers are the store's own (``TypeInfo``), so
/// a compact record is read with its type's description; the shared tier holds the named layout only.
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
    /// Where the named layout keeps ``signature`` (8 bytes, little-endian).
    static let namedSignatureOffset = 32
    var indexValues: [StoredIndexValue]
    /// What was done to the payload after the codec wrote it (compressed, sealed).
    var envelope: PayloadEnvelope = []
    /// The layout ``bytes(reserving:)`` writes; a header read from a record keeps the record's.
    var layout: RecordLayout = .named
    /// The number of the declaration with ``signature`` in the type's description, which a compact header holds
    /// instead of the signature.
    var declarationNumber: UInt32? = nil

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
        if layout == .compact, let compact = compactBytes(reserving: payloadCount) { return compact }
        var out: [UInt8] = []
        out.reserveCapacity(RecordHeader.fixedLength + indexValues.count * 24 + payloadCount)
        out.append(RecordHeader.magic)
        out.append(format.rawValue | envelope.rawValue)
        out.appendLittleEndian(UInt16(0))
        guard version >= 0, version <= Int(UInt32.max) else {
            throw .encodingFailed(reason: "schema version \(version) is out of range")
        }
        out.appendLittleEndian(UInt32(version))
        out.appendLittleEndian(createdAt)
        out.appendLittleEndian(updatedAt)
        out.appendLittleEndian(expiresAt)
        out.appendLittleEndian(signature)
        guard indexValues.count <= Int(UInt16.max) else {
            throw .encodingFailed(reason: "\(indexValues.count) index values; a record header holds at most 65535")
        }
        out.appendLittleEndian(UInt16(indexValues.count))
        for value in indexValues {
            // The name's UTF-8 straight from the string (no array made per value and record).
            let nameCount = value.name.utf8.count
            guard nameCount <= 255, value.bytes.count <= Int(UInt16.max) else {
                throw .encodingFailed(
                    reason: "the value of index \"\(value.name)\" takes \(value.bytes.count) bytes; an index value "
                        + "holds at most 65,535 (its name at most 255)")
            }
            out.append(UInt8(nameCount))
            out.append(contentsOf: value.name.utf8)
            out.append(value.kind.rawValue)
            out.appendLittleEndian(UInt16(value.bytes.count))
            out.append(contentsOf: value.bytes)
        }
        guard out.count <= Int(UInt16.max) else {
            throw .encodingFailed(
                reason: "index values take \(out.count) bytes together; a record's index values hold at most 65,535")
        }
        let length = UInt16(out.count)
        out[2] = UInt8(truncatingIfNeeded: length)
        out[3] = UInt8(truncatingIfNeeded: length >> 8)
        return out
    }
}
