/// The escape sequences of JSON strings (`\n`, `\u00e9`, a surrogate pair `\ud83d\ude00`), read the one way
/// for every reader of JSON text: the binary codec's (``BinaryJSONParser``) and the import's.
enum JSONEscape {
    /// An escape that is not JSON: why, and the offset where it was found.
    struct Failure: Error {
        let reason: String
        let offset: Int
    }

    /// Reads the escape whose backslash ends just before `position` in `text`, appends the UTF-8 of what it
    /// stands for to `output`, and returns the offset after it.
    ///
    /// - Throws: ``Failure`` for an unknown escape, a bad `\u` escape, or a surrogate without its other half.
    static func read(
        _ text: UnsafeRawBufferPointer, at position: Int, into output: inout [UInt8]
    ) throws(Failure) -> Int {
        var position = position
        guard position < text.count else { throw Failure(reason: "unterminated escape", offset: position) }
        let byte = text[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(byte)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hex4(text, &position))
            if (0xD800..<0xDC00).contains(scalar) {
                guard position < text.count, text[position] == UInt8(ascii: "\\") else {
                    throw Failure(reason: "high surrogate without a low surrogate", offset: position)
                }
                position += 1
                guard position < text.count, text[position] == UInt8(ascii: "u") else {
                    throw Failure(reason: "expected 'u'", offset: position)
                }
                position += 1
                let low = UInt32(try hex4(text, &position))
                guard (0xDC00..<0xE000).contains(low) else {
                    throw Failure(reason: "high surrogate without a low surrogate", offset: position)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw Failure(reason: "low surrogate without a high surrogate", offset: position)
            }
            guard let unicode = Unicode.Scalar(scalar) else {
                throw Failure(reason: "invalid Unicode escape", offset: position)
            }
            output.append(contentsOf: unicode.utf8)
        default:
            throw Failure(reason: "invalid escape", offset: position)
        }
        return position
    }

    /// Four hexadecimal digits at `position`, which moves past them.
    private static func hex4(_ text: UnsafeRawBufferPointer, _ position: inout Int) throws(Failure) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard position < text.count else { throw Failure(reason: "unterminated Unicode escape", offset: position) }
            let byte = text[position]
            position += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw Failure(reason: "invalid hexadecimal digit", offset: position)
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }
}
