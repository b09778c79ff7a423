/// The error thrown for malformed binary payloads, malformed JSON and values the format cannot express.
///
/// Codable-level problems (a missing key, a type mismatch) are reported as `DecodingError` or
/// `EncodingError` instead, so user code that catches those keeps working.
struct BinaryCodecError: Error, CustomStringConvertible {
    /// A human-readable explanation of what went wrong, including the byte offset where it applies.
    let description: String

    /// Creates an error with the given explanation.
    init(_ description: String) {
        self.description = description
    }

    /// Creates an error with the given explanation (the memberwise form).
    init(description: String) {
        self.description = description
    }

    /// Creates the error for malformed bytes found at `offset`.
    static func corrupt(_ reason: String, at offset: Int) -> BinaryCodecError {
        BinaryCodecError("Corrupt binary payload at byte \(offset): \(reason)")
    }
}
