/// One value of one index: a string or an exact number.
enum IndexValue: Sendable, Hashable {
    case string(String)
    case number(NumericValue)

    var kind: IndexKind {
        switch self {
        case .string: .string
        case .number: .number
        }
    }

    /// The bytes a record header stores: a string's UTF-8, a number's ordered key.
    /// Nil for NaN, which is never indexed.
    var storedBytes: [UInt8]? {
        switch self {
        case .string(let string): Array(string.utf8)
        case .number(let number): OrderedKey.encodeNumber(number)
        }
    }

    /// The index key (without the id): the ordered encoding. Nil for NaN.
    var keyBytes: [UInt8]? {
        switch self {
        case .string(let string): OrderedKey.encodeString(string).bytes
        case .number(let number): OrderedKey.encodeNumber(number)
        }
    }

    /// The index key of a value as a record header stores it.
    static func keyBytes(kind: IndexKind, stored: UnsafeRawBufferPointer) -> [UInt8] {
        switch kind {
        case .number: Array(stored)
        case .string: OrderedKey.encodeString(String(decoding: stored, as: UTF8.self)).bytes
        }
    }
}
