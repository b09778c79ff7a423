/// How a record header lays out its fields (see ``RecordHeader``).
enum RecordLayout: Sendable, Equatable {
    /// Magic 0xA7: fixed-width fields, each index value with its name. Self-describing: what the shared tier
    /// holds, what imports and stores of layout 3 write, and what a record the compact layout cannot express
    /// falls back to.
    case named
    /// Magic 0xA8: times as varints from the update time, index values by slot number (about half the bytes of
    /// a named header for three indexes).
    case compact
}

extension RecordHeader {
    static let compactMagic: UInt8 = 0xA8
    /// The shortest compact header a reader takes: magic, format, length, update time, four one-byte varints (this
    /// version writes the creation distance in ``creationDistanceBytes``, so its shortest is 22 bytes).
    static let compactFixedLength = 16

    /// The compact header's bytes, or nil when the header cannot take that layout (no declaration number, an index
    /// value without its slot number, a number value that is not an 11-byte key, an expiry whose distance from the
    /// update time the varint cannot hold) or holds more than the named layout can: the caller writes the named
    /// layout then (which throws for a header too long for it).
    func compactBytes(reserving payloadCount: Int) -> [UInt8]? {
        guard version >= 0, version <= Int(UInt32.max), let declarationNumber else { return nil }
        // Nothing the named layout could not hold: an export, the shared tier or a rewrite that falls back to it
        // must be able to write the record too.
        var namedLength = RecordHeader.fixedLength
        var valueBytes = 0
        for value in indexValues {
            guard value.slot != nil else { return nil }
            if value.kind == .number, value.bytes.count != OrderedKey.numberLength { return nil }
            namedLength += 4 + value.name.utf8.count + value.bytes.count
            valueBytes += value.bytes.count
        }
        guard namedLength <= Int(UInt16.max) else { return nil }
        let expiryCode: UInt64
        if expiresAt == 0 {
            expiryCode = 0
        } else {
            let zigzag = RecordHeader.zigzag(expiresAt &- updatedAt)
            guard zigzag != UInt64.max else { return nil }
            expiryCode = zigzag + 1
        }
        // Written through a pointer into the array's storage (a header is written for every record saved; an
        // append per field checked the array's capacity and uniqueness each time). The most it can take: the
        // fixed fields, five varints of at most 10 bytes, and per value two and its bytes.
        let most = RecordHeader.compactFixedLength + 50 + indexValues.count * 20 + valueBytes
        var out = [UInt8](unsafeUninitializedCapacity: most + payloadCount) { buffer, count in
            var writer = CompactHeaderWriter(buffer)
            writer.byte(RecordHeader.compactMagic)
            writer.byte(format.rawValue | envelope.rawValue)
            writer.littleEndian(UInt16(0))
            writer.littleEndian(updatedAt)
            writer.varint(expiryCode)
            // At a fixed width, so that a record saved again (whose creation time is then before its update time)
            // keeps its size: a batch save fills its pages to the brim, and records that grew split every one.
            writer.varint(
                RecordHeader.zigzag(updatedAt &- createdAt), minimumBytes: RecordHeader.creationDistanceBytes)
            writer.varint(UInt64(version))
            writer.varint(UInt64(declarationNumber))
            for value in indexValues {
                let slot = UInt64(value.slot ?? 0)
                switch value.kind {
                case .number:
                    writer.varint(slot << 1 | 1)
                case .string:
                    writer.varint(slot << 1)
                    writer.varint(UInt64(value.bytes.count))
                }
                value.bytes.withUnsafeBytes { writer.bytes($0) }
            }
            count = writer.position
        }
        guard out.count <= Int(UInt16.max) else { return nil }
        let length = UInt16(out.count)
        out[2] = UInt8(truncatingIfNeeded: length)
        out[3] = UInt8(truncatingIfNeeded: length >> 8)
        return out
    }

    /// The bytes the distance from the update time back to the creation time takes at least: seven varint bytes hold
    /// 49 bits, a zigzag code of distances below 2^48 ns (3.2 days). A longer distance takes more. At most 10, the
    /// longest varint `RecordView` reads.
    static let creationDistanceBytes = 7

    /// `value`'s zigzag code: small magnitudes of either sign take few varint bytes.
    @inline(__always)
    static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    /// The value whose zigzag code is `code`.
    @inline(__always)
    static func unzigzag(_ code: UInt64) -> Int64 {
        Int64(bitPattern: code >> 1) ^ -Int64(bitPattern: code & 1)
    }
}

/// Writes a compact header into memory sized for it (``RecordHeader/compactBytes(reserving:)``).
private struct CompactHeaderWriter {
    let buffer: UnsafeMutableBufferPointer<UInt8>
    private(set) var position = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        buffer[position] = value
        position += 1
    }

    @inline(__always)
    mutating func littleEndian<I: FixedWidthInteger>(_ value: I) {
        withUnsafeBytes(of: value.littleEndian) { bytes($0) }
    }

    /// `value` as an LEB128 varint (7 bits a byte, low bits first) of at least `minimumBytes` bytes: high groups of
    /// zero bits carry the continuation bit, which every LEB128 reader takes as the same value.
    @inline(__always)
    mutating func varint(_ value: UInt64, minimumBytes: Int = 1) {
        var rest = value
        var written = 1
        while rest >= 0x80 || written < minimumBytes {
            byte(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
            written += 1
        }
        byte(UInt8(rest))
    }

    @inline(__always)
    mutating func bytes(_ source: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress, let from = source.baseAddress else { return }
        assert(position + source.count <= buffer.count, "the compact header's bound is too small")
        UnsafeMutableRawPointer(base + position).copyMemory(from: from, byteCount: source.count)
        position += source.count
    }
}
