/// Writes the entries of a map, for a `container(keyedBy:)`.
///
/// Keys are written as their `stringValue`, so `[Int: V]` dictionaries become maps with keys
/// `"1"`, `"2"`, … exactly as `JSONEncoder` writes them.
struct BinaryKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    /// The state shared by the whole encode call.
    let state: BinaryEncodingState
    /// The map this container writes into.
    let frame: BinaryFrameReference
    /// The coding path of the map.
    let path: BinaryCodingPath?

    /// The coding path of the map.
    var codingPath: [any CodingKey] { BinaryCodingPath.keys(path) }

    /// Starts the entry for `key`: makes the map the innermost container and writes the key.
    @inline(__always)
    private func beginEntry<Value>(_ key: Key, _ value: @autoclosure () -> Value) throws {
        guard state.beginElement(in: frame) else {
            throw state.staleContainerError(value(), path: BinaryCodingPath.appending(key, to: path))
        }
        state.writer.writeKey(key.stringValue)
    }

    /// Writes nil for `key`.
    mutating func encodeNil(forKey key: Key) throws {
        try beginEntry(key, Optional<Int>.none)
        state.writer.writeNil()
    }

    /// Writes a Boolean for `key`.
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try beginEntry(key, value)
        state.writer.writeBool(value)
    }

    /// Writes a string for `key`.
    mutating func encode(_ value: String, forKey key: Key) throws {
        try beginEntry(key, value)
        state.writer.writeString(value)
    }

    /// Writes a `Double` for `key`.
    mutating func encode(_ value: Double, forKey key: Key) throws {
        try beginEntry(key, value)
        state.writer.writeDouble(value)
    }

    /// Writes a `Float` for `key`.
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try beginEntry(key, value)
        state.writer.writeFloat(value)
    }

    /// Writes an `Int` for `key`.
    mutating func encode(_ value: Int, forKey key: Key) throws { try signed(value, key) }
    /// Writes an `Int8` for `key`.
    mutating func encode(_ value: Int8, forKey key: Key) throws { try signed(value, key) }
    /// Writes an `Int16` for `key`.
    mutating func encode(_ value: Int16, forKey key: Key) throws { try signed(value, key) }
    /// Writes an `Int32` for `key`.
    mutating func encode(_ value: Int32, forKey key: Key) throws { try signed(value, key) }
    /// Writes an `Int64` for `key`.
    mutating func encode(_ value: Int64, forKey key: Key) throws { try signed(value, key) }
    /// Writes a `UInt` for `key`.
    mutating func encode(_ value: UInt, forKey key: Key) throws { try unsigned(value, key) }
    /// Writes a `UInt8` for `key`.
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try unsigned(value, key) }
    /// Writes a `UInt16` for `key`.
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try unsigned(value, key) }
    /// Writes a `UInt32` for `key`.
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try unsigned(value, key) }
    /// Writes a `UInt64` for `key`.
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try unsigned(value, key) }

    /// Writes a signed integer of any width for `key`.
    private func signed<Integer: SignedInteger & FixedWidthInteger>(_ value: Integer, _ key: Key) throws {
        try beginEntry(key, value)
        state.writer.writeInt(Int64(value))
    }

    /// Writes an unsigned integer of any width for `key`.
    private func unsigned<Integer: UnsignedInteger & FixedWidthInteger>(_ value: Integer, _ key: Key) throws {
        try beginEntry(key, value)
        state.writer.writeUInt(UInt64(value))
    }

    /// Writes any `Encodable` value for `key`.
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try beginEntry(key, value)
        try state.encodeValue(value, path: path, key: key)
    }

    /// Starts a map as the value for `key` and returns a container for it.
    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nestedPath = BinaryCodingPath(parent: path, key: key)
        return KeyedEncodingContainer(
            BinaryKeyedEncodingContainer<NestedKey>(
                state: state, frame: nestedFrame(tag: BinaryFormat.Tag.map, key: key), path: nestedPath
            ))
    }

    /// Starts an array as the value for `key` and returns a container for it.
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nestedPath = BinaryCodingPath(parent: path, key: key)
        return BinaryUnkeyedEncodingContainer(
            state: state, frame: nestedFrame(tag: BinaryFormat.Tag.array, key: key), path: nestedPath
        )
    }

    /// Writes `key` and opens a container as its value.
    private func nestedFrame(tag: UInt8, key: Key) -> BinaryFrameReference {
        guard state.beginElement(in: frame) else {
            state.recordMisuse("A container was used after a later sibling value was written.")
            return .invalid
        }
        state.writer.writeKey(key.stringValue)
        return state.openFrame(tag: tag)
    }

    /// Returns an encoder for the value of the key `"super"`, as `JSONEncoder` does.
    mutating func superEncoder() -> any Encoder {
        encoder(forKeyNamed: BinaryCodingKey.superKey.stringValue, key: BinaryCodingKey.superKey)
    }

    /// Returns an encoder for the value of `key`.
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        encoder(forKeyNamed: key.stringValue, key: key)
    }

    /// Writes the key `name` and returns an encoder for its value (`{}` if the encoder writes nothing).
    private func encoder(forKeyNamed name: String, key: any CodingKey) -> any Encoder {
        let encoderPath = BinaryCodingPath(parent: path, key: key)
        guard state.beginElement(in: frame) else {
            state.recordMisuse("A container was used after a later sibling value was written.")
            return BinaryEncoderImpl(state: state, path: encoderPath, valueStart: -1, depth: -1)
        }
        state.writer.writeKey(name)
        state.markPendingValue(in: frame)
        return BinaryEncoderImpl(
            state: state, path: encoderPath, valueStart: state.writer.count, depth: state.openFrameCount
        )
    }
}
