/// Writes one value for a `singleValueContainer()`.
struct BinarySingleValueEncodingContainer: SingleValueEncodingContainer {
    /// The state shared by the whole encode call.
    let state: BinaryEncodingState
    /// The coding path of the value.
    let path: BinaryCodingPath?
    /// The buffer offset where the value starts.
    let valueStart: Int
    /// The number of open containers when the encoder was made.
    let depth: Int

    /// The coding path of the value.
    var codingPath: [any CodingKey] { BinaryCodingPath.keys(path) }

    /// Checks that nothing was written for this value yet.
    private func prepare<Value>(_ value: Value) throws {
        guard state.canWriteSingleValue(valueStart: valueStart, depth: depth) else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: codingPath,
                    debugDescription: "Attempt to encode value through single value container when previously value "
                        + "already encoded."
                ))
        }
    }

    /// Writes nil.
    mutating func encodeNil() throws {
        try prepare(Optional<Int>.none)
        state.writer.writeNil()
    }

    /// Writes a Boolean.
    mutating func encode(_ value: Bool) throws {
        try prepare(value)
        state.writer.writeBool(value)
    }

    /// Writes a string.
    mutating func encode(_ value: String) throws {
        try prepare(value)
        state.writer.writeString(value)
    }

    /// Writes a `Double`.
    mutating func encode(_ value: Double) throws {
        try prepare(value)
        state.writer.writeDouble(value)
    }

    /// Writes a `Float`.
    mutating func encode(_ value: Float) throws {
        try prepare(value)
        state.writer.writeFloat(value)
    }

    /// Writes an `Int`.
    mutating func encode(_ value: Int) throws { try signed(value) }
    /// Writes an `Int8`.
    mutating func encode(_ value: Int8) throws { try signed(value) }
    /// Writes an `Int16`.
    mutating func encode(_ value: Int16) throws { try signed(value) }
    /// Writes an `Int32`.
    mutating func encode(_ value: Int32) throws { try signed(value) }
    /// Writes an `Int64`.
    mutating func encode(_ value: Int64) throws { try signed(value) }
    /// Writes a `UInt`.
    mutating func encode(_ value: UInt) throws { try unsigned(value) }
    /// Writes a `UInt8`.
    mutating func encode(_ value: UInt8) throws { try unsigned(value) }
    /// Writes a `UInt16`.
    mutating func encode(_ value: UInt16) throws { try unsigned(value) }
    /// Writes a `UInt32`.
    mutating func encode(_ value: UInt32) throws { try unsigned(value) }
    /// Writes a `UInt64`.
    mutating func encode(_ value: UInt64) throws { try unsigned(value) }

    /// Writes a signed integer of any width.
    private func signed<Integer: SignedInteger & FixedWidthInteger>(_ value: Integer) throws {
        try prepare(value)
        state.writer.writeInt(Int64(value))
    }

    /// Writes an unsigned integer of any width.
    private func unsigned<Integer: UnsignedInteger & FixedWidthInteger>(_ value: Integer) throws {
        try prepare(value)
        state.writer.writeUInt(UInt64(value))
    }

    /// Writes any `Encodable` value.
    mutating func encode<T: Encodable>(_ value: T) throws {
        try prepare(value)
        try state.encodeValue(value, path: path, key: nil)
    }
}
