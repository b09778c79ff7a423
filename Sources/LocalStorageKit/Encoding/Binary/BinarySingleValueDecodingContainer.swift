/// Reads one value of the payload for a `singleValueContainer()`.
struct BinarySingleValueDecodingContainer: SingleValueDecodingContainer {
    /// The state shared by the whole decode call.
    let state: BinaryDecodingState
    /// The offset of the value.
    let offset: Int
    /// The coding path of the value.
    let path: BinaryCodingPath?

    /// The coding path of the value.
    var codingPath: [any CodingKey] { BinaryCodingPath.keys(path) }

    /// Builds the coding path for an error.
    private func keys() -> [any CodingKey] {
        BinaryCodingPath.keys(path)
    }

    /// Returns whether the value is nil; `false` for malformed bytes, noted so that the decode fails
    /// (``BinaryDecodingState/noteMalformed(at:)``).
    func decodeNil() -> Bool {
        do {
            return try state.isNil(at: offset)
        } catch {
            state.noteMalformed(at: offset)
            return false
        }
    }

    /// Decodes a Boolean.
    func decode(_ type: Bool.Type) throws -> Bool { try state.decodeBool(at: offset, path: keys) }
    /// Decodes a string.
    func decode(_ type: String.Type) throws -> String { try state.decodeString(at: offset, path: keys) }
    /// Decodes a `Double`.
    func decode(_ type: Double.Type) throws -> Double { try state.decodeDouble(at: offset, path: keys) }
    /// Decodes a `Float`.
    func decode(_ type: Float.Type) throws -> Float { try state.decodeFloat(at: offset, path: keys) }
    /// Decodes an `Int`.
    func decode(_ type: Int.Type) throws -> Int { try state.decodeInteger(type, at: offset, path: keys) }
    /// Decodes an `Int8`.
    func decode(_ type: Int8.Type) throws -> Int8 { try state.decodeInteger(type, at: offset, path: keys) }
    /// Decodes an `Int16`.
    func decode(_ type: Int16.Type) throws -> Int16 { try state.decodeInteger(type, at: offset, path: keys) }
    /// Decodes an `Int32`.
    func decode(_ type: Int32.Type) throws -> Int32 { try state.decodeInteger(type, at: offset, path: keys) }
    /// Decodes an `Int64`.
    func decode(_ type: Int64.Type) throws -> Int64 { try state.decodeInteger(type, at: offset, path: keys) }
    /// Decodes a `UInt`.
    func decode(_ type: UInt.Type) throws -> UInt { try state.decodeInteger(type, at: offset, path: keys) }
    /// Decodes a `UInt8`.
    func decode(_ type: UInt8.Type) throws -> UInt8 { try state.decodeInteger(type, at: offset, path: keys) }
    /// Decodes a `UInt16`.
    func decode(_ type: UInt16.Type) throws -> UInt16 { try state.decodeInteger(type, at: offset, path: keys) }
    /// Decodes a `UInt32`.
    func decode(_ type: UInt32.Type) throws -> UInt32 { try state.decodeInteger(type, at: offset, path: keys) }
    /// Decodes a `UInt64`.
    func decode(_ type: UInt64.Type) throws -> UInt64 { try state.decodeInteger(type, at: offset, path: keys) }

    /// Decodes any `Decodable` value.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try state.decodeValue(type, at: offset, path: path, key: nil)
    }
}
