/// Encodes `Encodable` values into the compact, self-describing binary format of ``BinaryFormat``.
///
/// The result decodes with ``BinaryDecoder`` to the same value a `JSONEncoder`/`JSONDecoder` round
/// trip gives, and converts to the same JSON with ``BinaryJSON/jsonData(fromBinary:)``. Unlike
/// `JSONEncoder`, non-finite floats are kept.
///
/// ```swift
/// let bytes = try BinaryEncoder().encode(product)
/// ```
struct BinaryEncoder {
    /// Creates an encoder. It has no options: the format has one fixed shape.
    init() {}

    /// Returns the binary payload of `value`: a format-version byte followed by the encoded value.
    ///
    /// - Throws: `EncodingError` or ``BinaryCodecError`` if `value` encodes nothing at the top level,
    ///   throws itself, or uses the Encoder API out of order (writes into a container after a later
    ///   sibling container was written to).
    func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let state = BinaryEncodingState()
        let encodedNothing = try state.encodeValue(value, path: nil, key: nil)
        if let error = state.deferredError {
            throw error
        }
        if encodedNothing {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [],
                    debugDescription: "Top-level \(T.self) did not encode any values."
                ))
        }
        return state.writer.bytes
    }
}
