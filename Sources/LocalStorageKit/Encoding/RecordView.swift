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
    /// The header's layout: a compact one names its index values by slot number.
    let layout: RecordLayout
    let version: Int
    let createdAt: Int64
    let updatedAt: Int64
    let expiresAt: Int64
    /// The index declaration the record was indexed with: its signature (named layout) or its number in the
    /// type's description (compact).
    let declaration: StoredDeclaration
    /// Where the index values start.
    private let valuesStart: Int

    /// Validates the header of `bytes`, index values included; throws `decodingFailed` for anything that
    /// is not a record. Write paths use this one, so a header they copy is whole.
    init(_ bytes: UnsafeRawBufferPointer) throws(LocalStorageError) {
        try self.init(fixedPartOf: bytes)
        try validateIndexValues()
    }

    /// Validates a record read from the shared tier: whole, and in the named layout, the only one instances write
    /// there (a compact header's slot and declaration numbers are each store's own, so it would be read with
    /// another store's meaning).
    ///
    /// - Throws: `decodingFailed` for anything else, a compact header included.
    init(sharedTierRecord bytes: UnsafeRawBufferPointer, fixedPartOnly: Bool = false) throws(LocalStorageError) {
        try self.init(fixedPartOf: bytes)
        guard layout == .named else {
            throw .decodingFailed(
                reason: "the shared tier's copy has a compact record header, which no instance writes there; it is "
                    + "damaged")
        }
        if !fixedPartOnly { try validateIndexValues() }
    }

    /// Validates only the fixed part, for reads that decode the payload or look up one index value
    /// (``forEachIndexValue(_:)`` checks every length as it goes).
    init(fixedPartOf bytes: UnsafeRawBufferPointer) throws(LocalStorageError) {
        // What a newer version wrote is told apart only when the bytes are not a record of a known layout.
        let first = bytes.first
        let minimum = RecordView.minimumLength(magic: first)
        guard bytes.count >= minimum, first == RecordHeader.magic || first == RecordHeader.compactMagic else {
            throw .decodingFailed(
                reason: RecordView.newerLayout(of: bytes) ?? "the stored bytes are not a LocalStorageKit record")
        }
        let envelope = PayloadEnvelope(rawValue: bytes[1] & PayloadEnvelope.mask)
        guard let format = PayloadFormat(rawValue: bytes[1] & ~PayloadEnvelope.mask) else {
            throw .decodingFailed(reason: RecordView.newerLayout(of: bytes) ?? "unknown payload format \(bytes[1])")
        }
        let length = Int(bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self).littleEndian)
        guard length >= minimum, length <= bytes.count else {
            throw .decodingFailed(reason: "the record header length \(length) is out of bounds")
        }
        self.bytes = bytes
        self.headerLength = length
        self.format = format
        self.envelope = envelope
        if first == RecordHeader.magic {
            layout = .named
            version = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
            createdAt = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: Int64.self))
            updatedAt = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: Int64.self))
            expiresAt = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 24, as: Int64.self))
            declaration = .signature(
                UInt64(
                    littleEndian: bytes.loadUnaligned(
                        fromByteOffset: RecordHeader.namedSignatureOffset, as: UInt64.self)))
            valuesStart = RecordHeader.fixedLength
        } else {
            layout = .compact
            let updatedAt = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: Int64.self))
            var offset = 12
            guard let expiryCode = RecordView.varint(bytes, &offset, end: length),
                let createdCode = RecordView.varint(bytes, &offset, end: length),
                let version = RecordView.varint(bytes, &offset, end: length), version <= UInt64(UInt32.max),
                let number = RecordView.varint(bytes, &offset, end: length), number <= UInt64(UInt32.max)
            else { throw RecordView.damaged }
            self.updatedAt = updatedAt
            expiresAt = expiryCode == 0 ? 0 : updatedAt &+ RecordHeader.unzigzag(expiryCode - 1)
            createdAt = updatedAt &- RecordHeader.unzigzag(createdCode)
            self.version = Int(version)
            declaration = .number(UInt32(number))
            valuesStart = offset
        }
    }

    /// The shortest header of the layout `magic` names (the named layout's for any other byte).
    @inline(__always)
    private static func minimumLength(magic: UInt8?) -> Int {
        magic == RecordHeader.compactMagic ? RecordHeader.compactFixedLength : RecordHeader.fixedLength
    }

    /// The LEB128 varint at `offset` (moved past it), or nil when it runs past `end` or over 64 bits.
    @inline(__always)
    private static func varint(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int, end: Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < end {
            let byte = bytes[offset]
            offset += 1
            guard shift < 64, shift < 63 || byte <= 1 else { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    /// The header magics later layouts of the record header may take; this version reads none of them.
    static let laterMagics: ClosedRange<UInt8> = 0xA9...0xAF

    /// Why `bytes` look like a record a newer version of LocalStorageKit wrote (a later header layout, or this
    /// layout with a payload format this version does not know), or nil. Such a record is never overwritten
    /// or removed by maintenance: reads throw `decodingFailed` saying so.
    static func newerLayout(of bytes: UnsafeRawBufferPointer) -> String? {
        guard let first = bytes.first else { return nil }
        if laterMagics.contains(first) {
            return "it was written by a newer version of LocalStorageKit (record header layout "
                + "0x\(String(first, radix: 16, uppercase: true))), which this version cannot read; it is left untouched"
        }
        let minimum = RecordView.minimumLength(magic: first)
        guard first == RecordHeader.magic || first == RecordHeader.compactMagic, bytes.count >= minimum else {
            return nil
        }
        let length = Int(bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self).littleEndian)
        let format = bytes[1] & ~PayloadEnvelope.mask
        guard length >= minimum, length <= bytes.count, format != 0,
            PayloadFormat(rawValue: format) == nil
        else { return nil }
        return "it was written by a newer version of LocalStorageKit (payload format \(format)), which this version "
            + "cannot read; it is left untouched"
    }

    @inline(__always)
    private func load<I: FixedWidthInteger>(_ offset: Int, as type: I.Type) -> I {
        I(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: I.self))
    }

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

    /// Checks that every index value fits: the walk, which stops at the first one that does not, reaches the named
    /// header's count of values, or the compact header's end.
    private func validateIndexValues() throws(LocalStorageError) {
        var (walked, end) = (0, valuesStart)
        forEachIndexValueWithEnd { _, _, _, valueEnd in
            (walked, end) = (walked + 1, valueEnd)
            return true
        }
        let whole = layout == .named ? walked == Int(load(40, as: UInt16.self)) : end == headerLength
        guard whole else { throw RecordView.damaged }
    }

    private static var damaged: LocalStorageError { .decodingFailed(reason: "the record header is damaged") }

    /// Calls `body` with each stored index value (its index's name or slot, its kind, its bytes) until it
    /// returns false. Stops at the first entry that does not fit in the header (a damaged header never reads
    /// out of bounds).
    func forEachIndexValue(
        _ body: (StoredIndexTag, IndexKind, UnsafeRawBufferPointer) throws -> Bool
    ) rethrows {
        try forEachIndexValueWithEnd { tag, kind, value, _ in try body(tag, kind, value) }
    }

    /// ``forEachIndexValue(_:)`` with the offset where each value ends.
    private func forEachIndexValueWithEnd(
        _ body: (StoredIndexTag, IndexKind, UnsafeRawBufferPointer, Int) throws -> Bool
    ) rethrows {
        var offset = valuesStart
        switch layout {
        case .named:
            for _ in 0..<Int(load(40, as: UInt16.self)) {
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
                if try !body(.name(name), kind, value, offset) { return }
            }
        case .compact:
            while offset < headerLength {
                guard let code = RecordView.varint(bytes, &offset, end: headerLength), code >> 1 <= UInt64(UInt32.max)
                else { return }
                let kind: IndexKind = code & 1 == 1 ? .number : .string
                let valueLength: Int
                if kind == .number {
                    valueLength = OrderedKey.numberLength
                } else {
                    guard let length = RecordView.varint(bytes, &offset, end: headerLength),
                        length <= UInt64(headerLength)
                    else { return }
                    valueLength = Int(length)
                }
                guard offset + valueLength <= headerLength else { return }
                let value = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + valueLength)])
                offset += valueLength
                if try !body(.slot(UInt32(code >> 1)), kind, value, offset) { return }
            }
        }
    }
}

/// What a record header says of the index declaration it was indexed with: its signature (named layout) or its
/// number among the type's declarations (compact).
enum StoredDeclaration: Equatable {
    case signature(UInt64)
    case number(UInt32)
}

/// What a record header says of an index value's index: its name (named layout) or its slot number (compact).
enum StoredIndexTag {
    case name(UnsafeRawBufferPointer)
    case slot(UInt32)
}
