/// The `Decoder` handed to `init(from:)`: one value of the payload and its coding path.
struct BinaryDecoderImpl: Decoder {
    /// The state shared by the whole decode call.
    let state: BinaryDecodingState
    /// The offset of the value this decoder reads.
    let offset: Int
    /// The coding path of the value.
    let path: BinaryCodingPath?

    /// The coding path of the value.
    var codingPath: [any CodingKey] { BinaryCodingPath.keys(path) }

    /// No user info: the codec has no configuration.
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Returns the value as a keyed container; throws if it is not a map.
    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(try state.keyedContainer(keyedBy: type, at: offset, path: path))
    }

    /// Returns the value as an unkeyed container; throws if it is not an array.
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try state.unkeyedContainer(at: offset, path: path)
    }

    /// Returns the value as a single-value container.
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        BinarySingleValueDecodingContainer(state: state, offset: offset, path: path)
    }
}
