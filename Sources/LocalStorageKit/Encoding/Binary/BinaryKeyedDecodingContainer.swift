/// Reads the entries of a map of the payload by key, for a `container(keyedBy:)`.
///
/// A thin typed layer over ``BinaryMapDecoder``, which does the work without generic overhead.
struct BinaryKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    /// The map this container reads.
    let map: BinaryMapDecoder

    /// The coding path of the map.
    var codingPath: [any CodingKey] { BinaryCodingPath.keys(map.path) }

    /// The keys of all entries that `Key` can represent, in payload order.
    ///
    /// Complexity: O(n) in the size of the map.
    var allKeys: [Key] { map.allKeyNames.compactMap { Key(stringValue: $0) } }

    /// Returns whether the map has an entry for `key`; `false` for malformed bytes, noted so that the decode
    /// fails (``BinaryDecodingState/noteMalformed(at:)``).
    func contains(_ key: Key) -> Bool {
        do {
            return try map.entry(named: key.stringValue) != nil
        } catch {
            map.state.noteMalformed(at: map.bodyStart)
            return false
        }
    }

    /// Returns whether the value for `key` is nil; throws `keyNotFound` if the key is missing.
    func decodeNil(forKey key: Key) throws -> Bool { try map.isNil(key) }

    // MARK: - Decoding

    /// Decodes a Boolean.
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try map.decodeBool(key) }
    /// Decodes a string.
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try map.decodeString(key) }
    /// Decodes a `Double`.
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try map.decodeDouble(key) }
    /// Decodes a `Float`.
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try map.decodeFloat(key) }
    /// Decodes an `Int`.
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try map.decodeInteger(type, key) }
    /// Decodes an `Int8`.
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try map.decodeInteger(type, key) }
    /// Decodes an `Int16`.
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try map.decodeInteger(type, key) }
    /// Decodes an `Int32`.
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try map.decodeInteger(type, key) }
    /// Decodes an `Int64`.
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try map.decodeInteger(type, key) }
    /// Decodes a `UInt`.
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try map.decodeInteger(type, key) }
    /// Decodes a `UInt8`.
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try map.decodeInteger(type, key) }
    /// Decodes a `UInt16`.
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try map.decodeInteger(type, key) }
    /// Decodes a `UInt32`.
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try map.decodeInteger(type, key) }
    /// Decodes a `UInt64`.
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try map.decodeInteger(type, key) }

    /// Decodes any `Decodable` value.
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try map.decodeValue(type, key) }

    // MARK: - Decoding optionals

    /// Decodes a Boolean, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try map.decodeBoolIfPresent(key) }
    /// Decodes a string, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try map.decodeStringIfPresent(key)
    }
    /// Decodes a `Double`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try map.decodeDoubleIfPresent(key)
    }
    /// Decodes a `Float`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try map.decodeFloatIfPresent(key) }
    /// Decodes an `Int`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try map.decodeIntegerIfPresent(type, key)
    }
    /// Decodes an `Int8`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        try map.decodeIntegerIfPresent(type, key)
    }
    /// Decodes an `Int16`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try map.decodeIntegerIfPresent(type, key)
    }
    /// Decodes an `Int32`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try map.decodeIntegerIfPresent(type, key)
    }
    /// Decodes an `Int64`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try map.decodeIntegerIfPresent(type, key)
    }
    /// Decodes a `UInt`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        try map.decodeIntegerIfPresent(type, key)
    }
    /// Decodes a `UInt8`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try map.decodeIntegerIfPresent(type, key)
    }
    /// Decodes a `UInt16`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try map.decodeIntegerIfPresent(type, key)
    }
    /// Decodes a `UInt32`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try map.decodeIntegerIfPresent(type, key)
    }
    /// Decodes a `UInt64`, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try map.decodeIntegerIfPresent(type, key)
    }

    /// Decodes any `Decodable` value, or `nil` if the key is missing or its value is nil.
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try map.decodeValueIfPresent(type, key)
    }

    // MARK: - Nested containers

    /// Returns the value for `key` as a keyed container.
    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(try map.nestedContainer(keyedBy: type, forKey: key))
    }

    /// Returns the value for `key` as an unkeyed container.
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try map.nestedUnkeyedContainer(forKey: key)
    }

    /// Returns a decoder for the value of the `super` key (a nil value if it is missing, as in JSON).
    func superDecoder() throws -> any Decoder {
        try map.superDecoder(forKey: BinaryCodingKey.superKey)
    }

    /// Returns a decoder for the value of `key` (a nil value if it is missing, as in JSON).
    func superDecoder(forKey key: Key) throws -> any Decoder {
        try map.superDecoder(forKey: key)
    }
}
