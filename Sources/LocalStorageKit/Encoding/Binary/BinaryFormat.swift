/// Constants of the binary payload format written by ``BinaryEncoder`` and read by ``BinaryDecoder``.
///
/// A payload is one format-version byte followed by exactly one value. Every value starts with a tag
/// byte; multi-byte numbers are little-endian; lengths and counts are unsigned LEB128 varints.
///
/// | Tag            | Value                                                                 |
/// |----------------|-----------------------------------------------------------------------|
/// | `0x00...0x7F`  | integer 0...127 (positive fixint)                                     |
/// | `0xA0...0xBF`  | string of 0...31 UTF-8 bytes (fixstr), the bytes follow               |
/// | `0xC0`         | nil                                                                   |
/// | `0xC2`, `0xC3` | false, true                                                           |
/// | `0xC4`         | binary data: varint length, bytes                                     |
/// | `0xC5`         | decimal number: varint length, ASCII text in JSON number syntax       |
/// | `0xC6`         | date: float64 seconds since 2001-01-01 (`timeIntervalSinceReferenceDate`) |
/// | `0xCA`, `0xCB` | float32, float64                                                      |
/// | `0xCC...0xCF`  | uint8, uint16, uint32, uint64                                         |
/// | `0xD0...0xD3`  | int8, int16, int32, int64                                             |
/// | `0xD9`         | string: varint length, UTF-8 bytes                                    |
/// | `0xDC`         | array: varint count, varint body length, `count` values               |
/// | `0xDE`         | map: varint count, varint body length, `count` × (varint key length, key UTF-8, value) |
/// | `0xE0...0xFF`  | integer −32...−1 (negative fixint)                                    |
///
/// All other tag bytes are reserved and rejected by the reader.
enum BinaryFormat {
    /// The format-version byte that starts every payload.
    static let version: UInt8 = 1

    /// The deepest nesting of containers the decoder and the converters accept before they throw.
    static let maximumDepth = 512

    /// The header bytes reserved for a container's count and body length before its size is known.
    static let reservedHeaderLength = 2

    /// The tag bytes of the format.
    enum Tag {
        /// The largest positive fixint tag (the value 127).
        static let positiveFixIntMax: UInt8 = 0x7F
        /// The first fixstr tag; the string length is `tag - fixStringBase`.
        static let fixStringBase: UInt8 = 0xA0
        /// The last fixstr tag (a 31-byte string).
        static let fixStringMax: UInt8 = 0xBF
        /// The longest string stored with a fixstr tag.
        static let fixStringMaxLength = 31
        /// The nil value.
        static let null: UInt8 = 0xC0
        /// The Boolean false.
        static let boolFalse: UInt8 = 0xC2
        /// The Boolean true.
        static let boolTrue: UInt8 = 0xC3
        /// Binary data with a varint length.
        static let binary: UInt8 = 0xC4
        /// A decimal number kept as its text.
        static let decimal: UInt8 = 0xC5
        /// A date as a float64 of seconds since the reference date.
        static let date: UInt8 = 0xC6
        /// A 32-bit IEEE float.
        static let float32: UInt8 = 0xCA
        /// A 64-bit IEEE float.
        static let float64: UInt8 = 0xCB
        /// An unsigned 8-bit integer.
        static let uint8: UInt8 = 0xCC
        /// An unsigned 16-bit integer.
        static let uint16: UInt8 = 0xCD
        /// An unsigned 32-bit integer.
        static let uint32: UInt8 = 0xCE
        /// An unsigned 64-bit integer.
        static let uint64: UInt8 = 0xCF
        /// A signed 8-bit integer.
        static let int8: UInt8 = 0xD0
        /// A signed 16-bit integer.
        static let int16: UInt8 = 0xD1
        /// A signed 32-bit integer.
        static let int32: UInt8 = 0xD2
        /// A signed 64-bit integer.
        static let int64: UInt8 = 0xD3
        /// A string with a varint length.
        static let string: UInt8 = 0xD9
        /// An array with a varint count and body length.
        static let array: UInt8 = 0xDC
        /// A map with string keys, a varint count and body length.
        static let map: UInt8 = 0xDE
        /// The first negative fixint tag (the value −32).
        static let negativeFixIntMin: UInt8 = 0xE0
    }
}
