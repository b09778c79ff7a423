/// The `Encoder` handed to `encode(to:)`: where one value goes in the buffer, and its coding path.
struct BinaryEncoderImpl: Encoder {
    /// The state shared by the whole encode call.
    let state: BinaryEncodingState
    /// The coding path of the value.
    let path: BinaryCodingPath?
    /// The buffer offset where this encoder's value starts.
    let valueStart: Int
    /// The number of open containers when this encoder was made.
    let depth: Int

    /// The coding path of the value.
    var codingPath: [any CodingKey] { BinaryCodingPath.keys(path) }

    /// No user info: the codec has no configuration.
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Returns a keyed container that writes this encoder's value as a map.
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let frame = state.containerFrame(tag: BinaryFormat.Tag.map, valueStart: valueStart, depth: depth)
        return KeyedEncodingContainer(BinaryKeyedEncodingContainer<Key>(state: state, frame: frame, path: path))
    }

    /// Returns an unkeyed container that writes this encoder's value as an array.
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let frame = state.containerFrame(tag: BinaryFormat.Tag.array, valueStart: valueStart, depth: depth)
        return BinaryUnkeyedEncodingContainer(state: state, frame: frame, path: path)
    }

    /// Returns a container that writes this encoder's value as one value.
    func singleValueContainer() -> any SingleValueEncodingContainer {
        BinarySingleValueEncodingContainer(state: state, path: path, valueStart: valueStart, depth: depth)
    }
}
