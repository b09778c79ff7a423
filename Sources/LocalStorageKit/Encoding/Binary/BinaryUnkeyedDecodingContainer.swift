/// Reads the elements of an array of the payload in order, for an `unkeyedContainer()`.
struct BinaryUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    /// The state shared by the whole decode call.
    let state: BinaryDecodingState
    /// The coding path of the array.
    let path: BinaryCodingPath?
    /// The offset just past the last element.
    let bodyEnd: Int
    /// The number of elements.
    let elementCount: Int
    /// The offset of the next element.
    private var position: Int
    /// The index of the next element.
    private(set) var currentIndex = 0

    /// Creates a container over the elements in `bodyStart..<bodyEnd`.
    init(state: BinaryDecodingState, path: BinaryCodingPath?, bodyStart: Int, bodyEnd: Int, elementCount: Int) {
        self.state = state
        self.path = path
        self.bodyEnd = bodyEnd
        self.elementCount = elementCount
        self.position = bodyStart
    }

    /// The coding path of the array.
    var codingPath: [any CodingKey] { BinaryCodingPath.keys(path) }
    /// The number of elements.
    var count: Int? { elementCount }
    /// Whether every element has been decoded.
    var isAtEnd: Bool { currentIndex >= elementCount }

    // MARK: - Element access

    /// Returns the offset of the next element, throwing `valueNotFound` at the end of the array.
    private func nextOffset(_ type: Any.Type) throws -> Int {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: BinaryCodingPath.keys(path, appending: BinaryCodingKey.index(currentIndex)),
                    debugDescription: "Unkeyed container is at end."
                ))
        }
        guard position < bodyEnd else {
            throw BinaryCodecError.corrupt("array holds fewer elements than its count", at: position)
        }
        return position
    }

    /// Moves past the element at `offset`.
    private mutating func advance(past offset: Int) throws {
        let end = try state.reader.skipValue(at: offset)
        guard end <= bodyEnd else {
            throw BinaryCodecError.corrupt("element runs past its array", at: offset)
        }
        position = end
        currentIndex += 1
    }

    /// Decodes the next element with `read` and moves past it.
    @inline(__always)
    private mutating func decodeNext<T>(
        _ type: Any.Type, _ read: (BinaryDecodingState, Int, BinaryDecodingState.PathBuilder) throws -> T
    ) throws -> T {
        let offset = try nextOffset(type)
        let path = path
        let index = currentIndex
        let value = try read(state, offset) { BinaryCodingPath.keys(path, appending: BinaryCodingKey.index(index)) }
        try advance(past: offset)
        return value
    }

    // MARK: - Decoding

    /// Decodes a nil element and moves past it, or returns `false` and stays if the element is not nil.
    mutating func decodeNil() throws -> Bool {
        let offset = try nextOffset(Any?.self)
        guard try state.isNil(at: offset) else {
            return false
        }
        try advance(past: offset)
        return true
    }

    /// Decodes a Boolean.
    mutating func decode(_ type: Bool.Type) throws -> Bool {
        try decodeNext(type) { try $0.decodeBool(at: $1, path: $2) }
    }

    /// Decodes a string.
    mutating func decode(_ type: String.Type) throws -> String {
        try decodeNext(type) { try $0.decodeString(at: $1, path: $2) }
    }

    /// Decodes a `Double`.
    mutating func decode(_ type: Double.Type) throws -> Double {
        try decodeNext(type) { try $0.decodeDouble(at: $1, path: $2) }
    }

    /// Decodes a `Float`.
    mutating func decode(_ type: Float.Type) throws -> Float {
        try decodeNext(type) { try $0.decodeFloat(at: $1, path: $2) }
    }

    /// Decodes an `Int`.
    mutating func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type) }
    /// Decodes an `Int8`.
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type) }
    /// Decodes an `Int16`.
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type) }
    /// Decodes an `Int32`.
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type) }
    /// Decodes an `Int64`.
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type) }
    /// Decodes a `UInt`.
    mutating func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type) }
    /// Decodes a `UInt8`.
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type) }
    /// Decodes a `UInt16`.
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type) }
    /// Decodes a `UInt32`.
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type) }
    /// Decodes a `UInt64`.
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type) }

    /// Decodes an integer of any width.
    private mutating func decodeInteger<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        try decodeNext(type) { try $0.decodeInteger(type, at: $1, path: $2) }
    }

    /// Decodes any `Decodable` value.
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let key = BinaryCodingKey.index(currentIndex)
        let path = path
        return try decodeNext(type) { state, offset, _ in
            try state.decodeValue(type, at: offset, path: path, key: key)
        }
    }

    // MARK: - Nested containers

    /// Returns the next element as a keyed container and moves past it.
    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let offset = try nextOffset(KeyedDecodingContainer<NestedKey>.self)
        let nestedPath = try childPath()
        let container = try state.keyedContainer(keyedBy: type, at: offset, path: nestedPath)
        try advance(past: offset)
        return KeyedDecodingContainer(container)
    }

    /// Returns the next element as an unkeyed container and moves past it.
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let offset = try nextOffset((any UnkeyedDecodingContainer).self)
        let container = try state.unkeyedContainer(at: offset, path: try childPath())
        try advance(past: offset)
        return container
    }

    /// Returns a decoder for the next element and moves past it.
    mutating func superDecoder() throws -> any Decoder {
        let offset = try nextOffset((any Decoder).self)
        let decoder = BinaryDecoderImpl(state: state, offset: offset, path: try childPath())
        try advance(past: offset)
        return decoder
    }

    /// Returns the coding path of the next element, checking the nesting limit.
    private func childPath() throws -> BinaryCodingPath {
        let child = BinaryCodingPath(parent: path, key: BinaryCodingKey.index(currentIndex))
        guard child.depth <= BinaryFormat.maximumDepth else {
            throw BinaryCodecError.corrupt("nesting deeper than \(BinaryFormat.maximumDepth)", at: position)
        }
        return child
    }
}
