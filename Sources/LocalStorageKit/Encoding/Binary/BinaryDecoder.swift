/// Decodes `Decodable` values from payloads written by ``BinaryEncoder`` or ``BinaryJSON/binary(fromJSON:)``.
///
/// Decoding is as lenient as `JSONDecoder`: integers decode from any number they hold exactly,
/// floats from any number, `Date` from any number, `Data` from binary data or Base64, `URL` and
/// `UUID` from strings, `Decimal` from any number.
///
/// ```swift
/// let product = try bytes.withUnsafeBytes { try BinaryDecoder().decode(Product.self, from: $0) }
/// ```
struct BinaryDecoder {
    /// Creates a decoder. It has no options: the format has one fixed shape.
    init() {}

    /// Decodes a `T` from `bytes`, reading them in place; they need to stay valid only during the call.
    ///
    /// - Throws: `DecodingError` where Codable semantics call for one (a missing key, a type mismatch,
    ///   a nil value, a number that does not fit), ``BinaryCodecError`` for malformed bytes.
    func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        let reader = BinaryReader(bytes)
        guard reader.count > 0 else {
            throw BinaryCodecError("Empty binary payload.")
        }
        let version = try reader.tag(at: 0)
        guard version == BinaryFormat.version else {
            throw BinaryCodecError("Unsupported binary payload version \(version).")
        }
        guard try reader.skipValue(at: 1) == reader.count else {
            throw BinaryCodecError.corrupt("trailing bytes after the value", at: 1)
        }
        // The hint slots live on this call's stack: no heap allocation for the state of a decode. (An
        // `InlineArray` rather than `withUnsafeTemporaryAllocation`, whose throwing form looks up the metadata of a
        // `Result<T, any Error>` in the runtime at every call.)
        var words = BinaryDecodingState.Storage(repeating: 0)
        return try withUnsafeMutablePointer(to: &words) { pointer in
            try pointer.withMemoryRebound(to: Int.self, capacity: BinaryDecodingState.storageWords) { storage in
                let state = BinaryDecodingState(reader: reader, storage: storage)
                let value = try state.decodeValue(type, at: 1, path: nil, key: nil)
                if let offset = state.malformedOffset {
                    throw BinaryCodecError.corrupt("malformed bytes met while looking for a key or a nil", at: offset)
                }
                return value
            }
        }
    }
}
