import Foundation

/// The decoding errors of values of the wrong kind or out of range.
extension BinaryDecodingState {
    /// Returns the error for a value of the wrong kind: `valueNotFound` for nil, `typeMismatch` otherwise.
    ///
    /// - Throws: ``BinaryCodecError`` if the tag is not a valid one.
    func mismatch(_ type: Any.Type, at offset: Int, path: PathBuilder) throws -> DecodingError {
        let tag = try reader.tag(at: offset)
        guard let kind = BinaryReader.kind(of: tag) else {
            throw BinaryCodecError.corrupt("unknown tag 0x\(String(tag, radix: 16))", at: offset)
        }
        if tag == BinaryFormat.Tag.null {
            return DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: path(),
                    debugDescription: "Expected \(type) value but found null instead."
                ))
        }
        return DecodingError.typeMismatch(
            type,
            DecodingError.Context(
                codingPath: path(),
                debugDescription: "Expected to decode \(type) but found \(kind) instead."
            ))
    }

    /// Returns the error for a number that the requested type cannot hold.
    func notRepresentable(_ type: Any.Type, at offset: Int, path: PathBuilder) throws -> DecodingError {
        let text = try BinaryJSON.jsonText(ofNumberAt: offset, in: reader)
        return DecodingError.dataCorrupted(
            DecodingError.Context(
                codingPath: path(),
                debugDescription: "Parsed JSON number <\(text)> does not fit in \(type)."
            ))
    }
}
