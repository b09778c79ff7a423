/// A zero-copy view of a stored record: header fields read in place from the map.
///
/// Created with ``init(_:)``, which checks every length against the bytes, so later accessors cannot
/// read out of bounds. Valid only while the transaction that produced the bytes is open.
struct RecordView {
    let bytes: UnsafeRawBufferPointer
    let headerLength: Int
    let format: PayloadFormat
    /// What was done to the payload after the codec wrote it (compressed, sealed).
    let envelope: PayloadEnvelope

    /// Validates the header of `bytes`, index values included; throws `decodingFailed` for anything that
    /// is not a record. Write paths use this one, so a header they copy is whole.
    init(_ bytes: UnsafeRawBufferPointer) throws(LocalStorageError) {
        try self.init(fixedPartOf: bytes)
        try validateIndexValues()
    }

    /// Validates only the fixed part, for reads that decode the payload or look up one index value
    /// (``forEachIndexValue(_:)`` checks every length as it goes).
    init(fixedPartOf bytes: UnsafeRawBufferPointer) throws(LocalStorageError) {
        // What a newer version wrote is told apart only when the bytes are not a record of this layout.
        guard bytes.count >= RecordHeader.fixedLength, bytes[0] == RecordHeader.magic else {
            throw .decodingFailed(
                reason: RecordView.newerLayout(of: bytes) ?? "the stored bytes are not a LocalStorageKit record")
        }
        let envelope = PayloadEnvelope(rawValue: bytes[1] & PayloadEnvelope.mask)
        guard let format = PayloadFormat(rawValue: bytes[1] & ~PayloadEnvelope.mask) else {
            throw .decodingFailed(reason: RecordView.newerLayout(of: bytes) ?? "unknown payload format \(bytes[1])")
        }
        let length = Int(bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self).littleEndian)
        guard length >= RecordHeader.fixedLength, length <= bytes.count else {
            throw .decodingFailed(reason: "the record header length \(length) is out of bounds")
        }
        self.bytes = bytes
        self.headerLength = length
        self.format = format
        self.envelope = envelope
    }

    /// The header magics later layouts of the record header may take; this version reads none of them.
    static let laterMagics: ClosedRange<UInt8> = 0xA8...0xAF

    /// Why `bytes` look like a record a newer version of LocalStorageKit wrote (a later header layout, or this
    /// layout with a payload format this version does not know), or nil. Such a record is never overwritten
    /// or removed by maintenance: reads throw `decodingFailed` saying so.
    static func newerLayout(of bytes: UnsafeRawBufferPointer) -> String? {
        guard let first = bytes.first else { return nil }
        if laterMagics.contains(first) {
            return "it was written by a newer version of LocalStorageKit (record header layout "
                + "0x\(String(first, radix: 16, uppercase: true))), which this version cannot read; it is left untouched"
        }
        guard first == RecordHeader.magic, bytes.count >= RecordHeader.fixedLength else { return nil }
        let length = Int(bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self).littleEndian)
        let format = bytes[1] & ~PayloadEnvelope.mask
        guard length >= RecordHeader.fixedLength, length <= bytes.count, format != 0,
            PayloadFormat(rawValue: format) == nil
        else { return nil }
        return "it was written by a newer version of LocalStorageKit (payload format \(format)), which this version "
            + "cannot read; it is left untouched"
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
                let kind = IndexKind(rawValue: bytes[offset + 1 + nameLength])
            else { return }
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
            values.append(
                StoredIndexValue(
                    name: String(decoding: name, as: UTF8.self), kind: kind,
                    bytes: Array(value)))
            return true
        }
        return RecordHeader(
            format: format, version: version, createdAt: createdAt, updatedAt: updatedAt,
            expiresAt: expiresAt, signature: signature, indexValues: values, envelope: envelope)
    }
}
