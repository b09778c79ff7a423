/// Writes the elements of an array in order, for an `unkeyedContainer()`.
struct BinaryUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    /// The state shared by the whole encode call.
    let state: BinaryEncodingState
    /// The array this container writes into.
    let frame: BinaryFrameReference
    /// The coding path of the array.
    let path: BinaryCodingPath?
    /// The number of elements this container wrote, used once the array is finished.
    private var writtenCount = 0

    /// Creates a container that appends to the array `frame`.
    init(state: BinaryEncodingState, frame: BinaryFrameReference, path: BinaryCodingPath?) {
        self.state = state
        self.frame = frame
        self.path = path
    }

    /// The coding path of the array.
    var codingPath: [any CodingKey] { BinaryCodingPath.keys(path) }

    /// The number of elements written so far.
    var count: Int { state.elementCount(of: frame) ?? writtenCount }

    /// Starts the next element: makes the array the innermost container.
    @inline(__always)
    private mutating func beginElement<Value>(_ value: @autoclosure () -> Value) throws {
        guard state.beginElement(in: frame) else {
            let elementPath = BinaryCodingPath(parent: path, key: BinaryCodingKey.index(writtenCount))
            throw state.staleContainerError(value(), path: elementPath)
        }
        writtenCount += 1
    }

    /// Appends nil.
    mutating func encodeNil() throws {
        try beginElement(Optional<Int>.none)
        state.writer.writeNil()
    }

    /// Appends a Boolean.
    mutating func encode(_ value: Bool) throws {
        try beginElement(value)
        state.writer.writeBool(value)
    }

    /// Appends a string.
    mutating func encode(_ value: String) throws {
        try beginElement(value)
        state.writer.writeString(value)
    }

    /// Appends a `Double`.
    mutating func encode(_ value: Double) throws {
        try beginElement(value)
        state.writer.writeDouble(value)
    }

    /// Appends a `Float`.
    mutating func encode(_ value: Float) throws {
        try beginElement(value)
        state.writer.writeFloat(value)
    }

    /// Appends an `Int`.
    mutating func encode(_ value: Int) throws { try signed(value) }
    /// Appends an `Int8`.
    mutating func encode(_ value: Int8) throws { try signed(value) }
    /// Appends an `Int16`.
    mutating func encode(_ value: Int16) throws { try signed(value) }
    /// Appends an `Int32`.
    mutating func encode(_ value: Int32) throws { try signed(value) }
    /// Appends an `Int64`.
    mutating func encode(_ value: Int64) throws { try signed(value) }
    /// Appends a `UInt`.
    mutating func encode(_ value: UInt) throws { try unsigned(value) }
    /// Appends a `UInt8`.
    mutating func encode(_ value: UInt8) throws { try unsigned(value) }
    /// Appends a `UInt16`.
    mutating func encode(_ value: UInt16) throws { try unsigned(value) }
    /// Appends a `UInt32`.
    mutating func encode(_ value: UInt32) throws { try unsigned(value) }
    /// Appends a `UInt64`.
    mutating func encode(_ value: UInt64) throws { try unsigned(value) }

    /// Appends a signed integer of any width.
    private mutating func signed<Integer: SignedInteger & FixedWidthInteger>(_ value: Integer) throws {
        try beginElement(value)
        state.writer.writeInt(Int64(value))
    }

    /// Appends an unsigned integer of any width.
    private mutating func unsigned<Integer: UnsignedInteger & FixedWidthInteger>(_ value: Integer) throws {
        try beginElement(value)
        state.writer.writeUInt(UInt64(value))
    }

    /// Appends any `Encodable` value.
    mutating func encode<T: Encodable>(_ value: T) throws {
        let key = BinaryCodingKey.index(writtenCount)
        try beginElement(value)
        try state.encodeValue(value, path: path, key: key)
    }

    /// Appends a map and returns a container for it.
    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let nestedPath = BinaryCodingPath(parent: path, key: BinaryCodingKey.index(writtenCount))
        return KeyedEncodingContainer(
            BinaryKeyedEncodingContainer<NestedKey>(
                state: state, frame: nestedFrame(tag: BinaryFormat.Tag.map), path: nestedPath
            ))
    }

    /// Appends an array and returns a container for it.
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nestedPath = BinaryCodingPath(parent: path, key: BinaryCodingKey.index(writtenCount))
        return BinaryUnkeyedEncodingContainer(
            state: state, frame: nestedFrame(tag: BinaryFormat.Tag.array), path: nestedPath
        )
    }

    /// Opens a container as the next element.
    private mutating func nestedFrame(tag: UInt8) -> BinaryFrameReference {
        guard state.beginElement(in: frame) else {
            state.recordMisuse("A container was used after a later sibling value was written.")
            return .invalid
        }
        writtenCount += 1
        return state.openFrame(tag: tag)
    }

    /// Returns an encoder for the next element (`{}` if the encoder writes nothing).
    mutating func superEncoder() -> any Encoder {
        let encoderPath = BinaryCodingPath(parent: path, key: BinaryCodingKey.index(writtenCount))
        guard state.beginElement(in: frame) else {
            state.recordMisuse("A container was used after a later sibling value was written.")
            return BinaryEncoderImpl(state: state, path: encoderPath, valueStart: -1, depth: -1)
        }
        writtenCount += 1
        state.markPendingValue(in: frame)
        return BinaryEncoderImpl(
            state: state, path: encoderPath, valueStart: state.writer.count, depth: state.openFrameCount
        )
    }
}
