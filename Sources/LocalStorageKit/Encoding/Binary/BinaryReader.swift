import Foundation

/// Reads tagged values of the binary format from borrowed bytes, checking every length.
///
/// The reader never copies the buffer; it is valid only while the bytes it was made from are.
/// Every method throws ``BinaryCodecError`` instead of reading outside the buffer.
struct BinaryReader {
    /// The header of an array or a map.
    struct ContainerHeader {
        /// The container's tag, ``BinaryFormat/Tag/array`` or ``BinaryFormat/Tag/map``.
        let tag: UInt8
        /// The number of elements (arrays) or entries (maps).
        let count: Int
        /// The offset of the first element or entry.
        let bodyStart: Int
        /// The offset just past the last element or entry.
        let bodyEnd: Int
    }

    /// A number read from any numeric tag.
    enum Number {
        /// A negative integer, or any integer read from a signed tag.
        case signed(Int64)
        /// A non-negative integer.
        case unsigned(UInt64)
        /// A 64-bit float (also dates).
        case double(Double)
        /// A 32-bit float.
        case float(Float)
        /// A decimal number kept as text.
        case text(String)
    }

    /// The offset that stands for a nil value not present in the bytes (a missing `super` key).
    static let virtualNullOffset = -1

    /// The first byte, or `nil` for an empty buffer.
    let base: UnsafeRawPointer?
    /// The number of bytes.
    let count: Int

    /// Creates a reader over `bytes` without copying them.
    init(_ bytes: UnsafeRawBufferPointer) {
        base = bytes.baseAddress
        count = bytes.baseAddress == nil ? 0 : bytes.count
    }

    // MARK: - Bytes and lengths

    /// Returns the tag byte at `offset`.
    @inline(__always)
    func tag(at offset: Int) throws -> UInt8 {
        guard offset >= 0, offset < count, let base else {
            if offset == Self.virtualNullOffset {
                return BinaryFormat.Tag.null
            }
            throw BinaryCodecError.corrupt("unexpected end of data", at: offset)
        }
        return base.load(fromByteOffset: offset, as: UInt8.self)
    }

    /// Returns the byte at `offset`, which the caller has checked is inside the buffer.
    @inline(__always)
    private func byte(_ offset: Int, _ base: UnsafeRawPointer) -> UInt8 {
        base.load(fromByteOffset: offset, as: UInt8.self)
    }

    /// Reads an unsigned LEB128 varint at `offset`; returns its value and the offset after it.
    @inline(__always)
    func varint(at offset: Int) throws -> (value: Int, end: Int) {
        guard offset >= 0, offset < count, let base else {
            throw BinaryCodecError.corrupt("truncated length", at: offset)
        }
        let first = byte(offset, base)
        if first < 0x80 {
            return (Int(first), offset + 1)
        }
        return try longVarint(at: offset, base)
    }

    /// Reads a varint of more than one byte.
    private func longVarint(at offset: Int, _ base: UnsafeRawPointer) throws -> (value: Int, end: Int) {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var position = offset
        while true {
            guard position < count else {
                throw BinaryCodecError.corrupt("truncated length", at: offset)
            }
            let current = byte(position, base)
            position += 1
            let payload = UInt64(current & 0x7F)
            guard shift < 63 || payload == 0 else {
                throw BinaryCodecError.corrupt("length overflows", at: offset)
            }
            result |= payload << shift
            if current & 0x80 == 0 {
                break
            }
            shift += 7
        }
        guard result <= UInt64(Int.max) else {
            throw BinaryCodecError.corrupt("length overflows", at: offset)
        }
        return (Int(result), position)
    }

    /// Reads a varint byte length at `offset` and checks that that many bytes follow it.
    @inline(__always)
    func length(at offset: Int) throws -> (value: Int, end: Int) {
        let length = try varint(at: offset)
        guard length.value <= count - length.end else {
            throw BinaryCodecError.corrupt("length \(length.value) runs past the end", at: offset)
        }
        return length
    }

    /// Returns `end` after checking that it does not run past the buffer.
    @inline(__always)
    private func checked(_ end: Int, from offset: Int) throws -> Int {
        guard end <= count else {
            throw BinaryCodecError.corrupt("value runs past the end", at: offset)
        }
        return end
    }

    /// Loads a little-endian fixed-width integer of `width` bytes after the tag at `offset`.
    @inline(__always)
    func fixed<Integer: FixedWidthInteger>(_ type: Integer.Type, afterTagAt offset: Int) throws -> Integer {
        let start = offset + 1
        guard let base, offset >= 0, MemoryLayout<Integer>.size <= count - start else {
            throw BinaryCodecError.corrupt("truncated number", at: offset)
        }
        return Integer(littleEndian: base.loadUnaligned(fromByteOffset: start, as: Integer.self))
    }

    /// Returns the bytes `start..<start + length`, which the caller has checked lie inside the buffer.
    @inline(__always)
    func bytes(from start: Int, count length: Int) -> UnsafeRawBufferPointer {
        guard let base else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        return UnsafeRawBufferPointer(start: base + start, count: length)
    }

    // MARK: - Values

    /// ``skipValue(at:)`` with the values most map entries hold (small integers, short strings, doubles, Booleans)
    /// read inline; the rest go through ``skipValue(at:)``.
    @inline(__always)
    func valueEnd(at offset: Int) throws -> Int {
        if offset >= 0, offset < count, let base {
            let tag = byte(offset, base)
            if tag >= BinaryFormat.Tag.fixStringBase && tag <= BinaryFormat.Tag.fixStringMax {
                let end = offset + 1 + Int(tag - BinaryFormat.Tag.fixStringBase)
                if end <= count { return end }
            } else if tag == BinaryFormat.Tag.float64 {
                if offset + 9 <= count { return offset + 9 }
            } else if tag <= BinaryFormat.Tag.positiveFixIntMax || tag >= BinaryFormat.Tag.negativeFixIntMin
                || tag == BinaryFormat.Tag.boolTrue || tag == BinaryFormat.Tag.boolFalse
            {
                return offset + 1
            }
        }
        return try skipValue(at: offset)
    }

    /// Returns the offset just past the value at `offset`, without looking inside containers.
    ///
    /// Complexity: O(1); containers carry their byte length.
    func skipValue(at offset: Int) throws -> Int {
        let tag = try tag(at: offset)
        switch tag {
        case 0x00...BinaryFormat.Tag.positiveFixIntMax, BinaryFormat.Tag.negativeFixIntMin...0xFF,
            BinaryFormat.Tag.null, BinaryFormat.Tag.boolFalse, BinaryFormat.Tag.boolTrue:
            return offset == Self.virtualNullOffset ? offset : offset + 1
        case BinaryFormat.Tag.fixStringBase...BinaryFormat.Tag.fixStringMax:
            return try checked(offset + 1 + Int(tag - BinaryFormat.Tag.fixStringBase), from: offset)
        case BinaryFormat.Tag.string, BinaryFormat.Tag.binary, BinaryFormat.Tag.decimal:
            let length = try length(at: offset + 1)
            return length.end + length.value
        case BinaryFormat.Tag.int8, BinaryFormat.Tag.uint8:
            return try checked(offset + 2, from: offset)
        case BinaryFormat.Tag.int16, BinaryFormat.Tag.uint16:
            return try checked(offset + 3, from: offset)
        case BinaryFormat.Tag.int32, BinaryFormat.Tag.uint32, BinaryFormat.Tag.float32:
            return try checked(offset + 5, from: offset)
        case BinaryFormat.Tag.int64, BinaryFormat.Tag.uint64, BinaryFormat.Tag.float64, BinaryFormat.Tag.date:
            return try checked(offset + 9, from: offset)
        case BinaryFormat.Tag.array, BinaryFormat.Tag.map:
            return try containerHeader(at: offset).bodyEnd
        default:
            throw BinaryCodecError.corrupt("unknown tag 0x\(String(tag, radix: 16))", at: offset)
        }
    }

    /// Reads the header of the array or map at `offset`.
    func containerHeader(at offset: Int) throws -> ContainerHeader {
        let tag = try tag(at: offset)
        guard tag == BinaryFormat.Tag.array || tag == BinaryFormat.Tag.map else {
            throw BinaryCodecError.corrupt("expected a container", at: offset)
        }
        let elementCount = try varint(at: offset + 1)
        let bodyLength = try length(at: elementCount.end)
        // Every element takes at least one byte; every map entry at least two (key length, value tag).
        let minimumBytes = tag == BinaryFormat.Tag.map ? 2 : 1
        guard elementCount.value <= bodyLength.value / minimumBytes else {
            throw BinaryCodecError.corrupt("count \(elementCount.value) exceeds the container's bytes", at: offset)
        }
        return ContainerHeader(
            tag: tag,
            count: elementCount.value,
            bodyStart: bodyLength.end,
            bodyEnd: bodyLength.end + bodyLength.value
        )
    }

    /// Returns the UTF-8 bytes of the string at `offset`, or `nil` if the value there is not a string.
    @inline(__always)
    func stringBytes(at offset: Int) throws -> UnsafeRawBufferPointer? {
        let tag = try tag(at: offset)
        if tag >= BinaryFormat.Tag.fixStringBase && tag <= BinaryFormat.Tag.fixStringMax {
            let length = Int(tag - BinaryFormat.Tag.fixStringBase)
            guard length <= count - offset - 1 else {
                throw BinaryCodecError.corrupt("string runs past the end", at: offset)
            }
            return bytes(from: offset + 1, count: length)
        }
        guard tag == BinaryFormat.Tag.string else {
            return nil
        }
        let length = try length(at: offset + 1)
        return bytes(from: length.end, count: length.value)
    }

    /// Returns the bytes of the binary value at `offset`, or `nil` if the value there is not binary data.
    func binaryBytes(at offset: Int) throws -> UnsafeRawBufferPointer? {
        guard try tag(at: offset) == BinaryFormat.Tag.binary else {
            return nil
        }
        let length = try length(at: offset + 1)
        return bytes(from: length.end, count: length.value)
    }

    /// Returns the text of the decimal value at `offset`, or `nil` if the value there is not a decimal.
    func decimalText(at offset: Int) throws -> String? {
        guard try tag(at: offset) == BinaryFormat.Tag.decimal else {
            return nil
        }
        let length = try length(at: offset + 1)
        return Self.string(from: bytes(from: length.end, count: length.value))
    }

    /// Reads the number at `offset`, or returns `nil` if the value there is not a number.
    func number(at offset: Int) throws -> Number? {
        let tag = try tag(at: offset)
        switch tag {
        case 0x00...BinaryFormat.Tag.positiveFixIntMax:
            return .unsigned(UInt64(tag))
        case BinaryFormat.Tag.negativeFixIntMin...0xFF:
            return .signed(Int64(Int8(bitPattern: tag)))
        case BinaryFormat.Tag.uint8:
            return .unsigned(UInt64(try fixed(UInt8.self, afterTagAt: offset)))
        case BinaryFormat.Tag.uint16:
            return .unsigned(UInt64(try fixed(UInt16.self, afterTagAt: offset)))
        case BinaryFormat.Tag.uint32:
            return .unsigned(UInt64(try fixed(UInt32.self, afterTagAt: offset)))
        case BinaryFormat.Tag.uint64:
            return .unsigned(try fixed(UInt64.self, afterTagAt: offset))
        case BinaryFormat.Tag.int8:
            return .signed(Int64(try fixed(Int8.self, afterTagAt: offset)))
        case BinaryFormat.Tag.int16:
            return .signed(Int64(try fixed(Int16.self, afterTagAt: offset)))
        case BinaryFormat.Tag.int32:
            return .signed(Int64(try fixed(Int32.self, afterTagAt: offset)))
        case BinaryFormat.Tag.int64:
            return .signed(try fixed(Int64.self, afterTagAt: offset))
        case BinaryFormat.Tag.float64, BinaryFormat.Tag.date:
            return .double(Double(bitPattern: try fixed(UInt64.self, afterTagAt: offset)))
        case BinaryFormat.Tag.float32:
            return .float(Float(bitPattern: try fixed(UInt32.self, afterTagAt: offset)))
        case BinaryFormat.Tag.decimal:
            return try decimalText(at: offset).map(Number.text)
        default:
            return nil
        }
    }

    /// Makes a `String` from UTF-8 bytes, replacing invalid sequences with U+FFFD.
    @inline(__always)
    static func string(from utf8: UnsafeRawBufferPointer) -> String {
        guard let source = utf8.baseAddress, !utf8.isEmpty else {
            return ""
        }
        return String(unsafeUninitializedCapacity: utf8.count) { target in
            guard let destination = target.baseAddress else {
                return 0
            }
            UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: utf8.count)
            return utf8.count
        }
    }

    /// Describes the kind of value a tag starts, for error messages, or `nil` for a reserved tag.
    static func kind(of tag: UInt8) -> String? {
        switch tag {
        case 0x00...BinaryFormat.Tag.positiveFixIntMax, BinaryFormat.Tag.negativeFixIntMin...0xFF,
            BinaryFormat.Tag.uint8...BinaryFormat.Tag.int64, BinaryFormat.Tag.float32, BinaryFormat.Tag.float64,
            BinaryFormat.Tag.decimal:
            return "a number"
        case BinaryFormat.Tag.fixStringBase...BinaryFormat.Tag.fixStringMax, BinaryFormat.Tag.string:
            return "a string"
        case BinaryFormat.Tag.null: return "null"
        case BinaryFormat.Tag.boolFalse, BinaryFormat.Tag.boolTrue: return "bool"
        case BinaryFormat.Tag.binary: return "binary data"
        case BinaryFormat.Tag.date: return "a date"
        case BinaryFormat.Tag.array: return "an array"
        case BinaryFormat.Tag.map: return "a dictionary"
        default: return nil
        }
    }
}
