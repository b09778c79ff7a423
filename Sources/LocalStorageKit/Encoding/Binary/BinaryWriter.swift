import Foundation

/// Appends tagged values of the binary format to one growing byte buffer.
///
/// The buffer is raw memory owned by this noncopyable writer: appending is a capacity check and a
/// copy, with none of `Array`'s uniqueness checks. Containers are written in place:
/// ``beginContainer(_:)`` reserves two header bytes for the count and the body length, and
/// ``endContainer(header:count:)`` fills them in, moving the body only when the varints need more.
struct BinaryWriter: ~Copyable {
    /// The start of the buffer.
    private var base: UnsafeMutablePointer<UInt8>
    /// The number of bytes the buffer holds.
    private var capacity: Int
    /// The number of bytes written so far.
    private(set) var count = 0

    /// Creates a writer whose buffer has room for `capacity` bytes before it grows.
    init(capacity: Int) {
        self.capacity = Swift.max(capacity, 16)
        base = UnsafeMutablePointer<UInt8>.allocate(capacity: self.capacity)
    }

    /// Frees the buffer.
    deinit {
        base.deallocate()
    }

    /// Returns the bytes written, as an array.
    var bytes: [UInt8] {
        Array(UnsafeBufferPointer(start: base, count: count))
    }

    /// Returns the byte at `offset`, which must be below ``count``.
    func byte(at offset: Int) -> UInt8 {
        precondition(offset >= 0 && offset < count, "offset out of range")
        return base[offset]
    }

    // MARK: - Raw bytes

    /// Makes room for `extra` more bytes.
    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if capacity - count < extra {
            grow(to: count + extra)
        }
    }

    /// Moves the buffer to one of at least `minimum` bytes.
    private mutating func grow(to minimum: Int) {
        let newCapacity = Swift.max(minimum, capacity * 2)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Appends one byte.
    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    /// Appends a tag byte and a second byte.
    @inline(__always)
    private mutating func append(_ first: UInt8, _ second: UInt8) {
        reserve(2)
        base[count] = first
        base[count + 1] = second
        count += 2
    }

    /// Appends `bytes`.
    @inline(__always)
    mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else {
            return
        }
        reserve(bytes.count)
        UnsafeMutableRawPointer(base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// Appends `bytes`.
    @inline(__always)
    mutating func append(contentsOf bytes: UnsafeBufferPointer<UInt8>) {
        append(contentsOf: UnsafeRawBufferPointer(bytes))
    }

    // MARK: - Scalars

    /// Writes the nil value.
    mutating func writeNil() {
        append(BinaryFormat.Tag.null)
    }

    /// Writes a Boolean.
    mutating func writeBool(_ value: Bool) {
        append(value ? BinaryFormat.Tag.boolTrue : BinaryFormat.Tag.boolFalse)
    }

    /// Writes a signed integer in the smallest integer form that holds it.
    mutating func writeInt(_ value: Int64) {
        if value >= 0 {
            writeUInt(UInt64(value))
        } else if value >= -32 {
            append(UInt8(truncatingIfNeeded: value))
        } else if value >= Int64(Int8.min) {
            append(BinaryFormat.Tag.int8)
            append(UInt8(truncatingIfNeeded: value))
        } else if value >= Int64(Int16.min) {
            append(BinaryFormat.Tag.int16)
            appendLittleEndian(UInt16(truncatingIfNeeded: value))
        } else if value >= Int64(Int32.min) {
            append(BinaryFormat.Tag.int32)
            appendLittleEndian(UInt32(truncatingIfNeeded: value))
        } else {
            append(BinaryFormat.Tag.int64)
            appendLittleEndian(UInt64(bitPattern: value))
        }
    }

    /// Writes an unsigned integer in the smallest integer form that holds it.
    mutating func writeUInt(_ value: UInt64) {
        if value <= UInt64(BinaryFormat.Tag.positiveFixIntMax) {
            append(UInt8(truncatingIfNeeded: value))
        } else if value <= UInt64(UInt8.max) {
            append(BinaryFormat.Tag.uint8)
            append(UInt8(truncatingIfNeeded: value))
        } else if value <= UInt64(UInt16.max) {
            append(BinaryFormat.Tag.uint16)
            appendLittleEndian(UInt16(truncatingIfNeeded: value))
        } else if value <= UInt64(UInt32.max) {
            append(BinaryFormat.Tag.uint32)
            appendLittleEndian(UInt32(truncatingIfNeeded: value))
        } else {
            append(BinaryFormat.Tag.uint64)
            appendLittleEndian(value)
        }
    }

    /// Writes a 64-bit float, keeping every bit (infinities and NaN included).
    mutating func writeDouble(_ value: Double) {
        append(BinaryFormat.Tag.float64)
        appendLittleEndian(value.bitPattern)
    }

    /// Writes a 32-bit float, keeping its width so that JSON shows it the way `JSONEncoder` does.
    mutating func writeFloat(_ value: Float) {
        append(BinaryFormat.Tag.float32)
        appendLittleEndian(value.bitPattern)
    }

    /// Writes a date as seconds since the reference date, the number `JSONEncoder` shows by default.
    mutating func writeDate(_ value: Date) {
        append(BinaryFormat.Tag.date)
        appendLittleEndian(value.timeIntervalSinceReferenceDate.bitPattern)
    }

    /// Writes a decimal number as its text (JSON number syntax).
    mutating func writeDecimalText(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            append(BinaryFormat.Tag.decimal)
            writeVarint(utf8.count)
            append(contentsOf: utf8)
        }
    }

    /// Writes a string.
    mutating func writeString(_ value: String) {
        var value = value
        value.withUTF8 { writeString(utf8: $0) }
    }

    /// Writes a string given as UTF-8 bytes.
    mutating func writeString(utf8: UnsafeBufferPointer<UInt8>) {
        if utf8.count <= BinaryFormat.Tag.fixStringMaxLength {
            append(BinaryFormat.Tag.fixStringBase | UInt8(truncatingIfNeeded: utf8.count))
        } else {
            append(BinaryFormat.Tag.string)
            writeVarint(utf8.count)
        }
        append(contentsOf: utf8)
    }

    /// Writes binary data.
    mutating func writeBinary(_ value: Data) {
        append(BinaryFormat.Tag.binary)
        writeVarint(value.count)
        value.withUnsafeBytes { append(contentsOf: $0) }
    }

    /// Writes a map key (varint length and UTF-8 bytes, no tag).
    mutating func writeKey(_ key: String) {
        var key = key
        key.withUTF8 { writeKey(utf8: $0) }
    }

    /// Writes a map key given as UTF-8 bytes.
    mutating func writeKey(utf8: UnsafeBufferPointer<UInt8>) {
        writeVarint(utf8.count)
        append(contentsOf: utf8)
    }

    /// Writes an empty map, the value of an `Encodable` that encoded nothing (JSON shows `{}`).
    mutating func writeEmptyMap() {
        append(BinaryFormat.Tag.map)
        append(0)
        append(0)
    }

    // MARK: - Containers

    /// Starts an array or map and returns the offset of its header, to pass to ``endContainer(header:count:)``.
    mutating func beginContainer(_ tag: UInt8) -> Int {
        let header = count
        append(tag)
        append(0)
        append(0)
        return header
    }

    /// Finishes the container whose header is at `header`, holding `count` elements.
    ///
    /// Complexity: O(1) when the count and the body length are below 128, otherwise O(body length).
    mutating func endContainer(header: Int, count: Int) {
        let bodyStart = header + 1 + BinaryFormat.reservedHeaderLength
        let bodyLength = self.count - bodyStart
        let needed = Self.varintLength(count) + Self.varintLength(bodyLength)
        if needed > BinaryFormat.reservedHeaderLength {
            let extra = needed - BinaryFormat.reservedHeaderLength
            reserve(extra)
            memmove(base + bodyStart + extra, base + bodyStart, bodyLength)
            self.count += extra
        }
        var offset = header + 1
        writeVarint(count, at: &offset)
        writeVarint(bodyLength, at: &offset)
    }

    // MARK: - Varints and fixed-width integers

    /// Appends `value` as an unsigned LEB128 varint.
    mutating func writeVarint(_ value: Int) {
        var rest = UInt(bitPattern: value)
        while rest >= 0x80 {
            append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        append(UInt8(truncatingIfNeeded: rest))
    }

    /// Overwrites bytes from `offset` with `value` as a varint and advances `offset` past it.
    private mutating func writeVarint(_ value: Int, at offset: inout Int) {
        var rest = UInt(bitPattern: value)
        while rest >= 0x80 {
            base[offset] = UInt8(truncatingIfNeeded: rest) | 0x80
            offset += 1
            rest >>= 7
        }
        base[offset] = UInt8(truncatingIfNeeded: rest)
        offset += 1
    }

    /// Returns the number of bytes `value` takes as a varint.
    static func varintLength(_ value: Int) -> Int {
        var rest = UInt(bitPattern: value)
        var length = 1
        while rest >= 0x80 {
            rest >>= 7
            length += 1
        }
        return length
    }

    /// Appends a fixed-width integer in little-endian byte order.
    mutating func appendLittleEndian<Integer: FixedWidthInteger>(_ value: Integer) {
        let size = MemoryLayout<Integer>.size
        reserve(size)
        UnsafeMutableRawPointer(base + count).storeBytes(of: value.littleEndian, as: Integer.self)
        count += size
    }
}
