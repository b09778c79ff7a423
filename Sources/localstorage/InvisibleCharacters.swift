/// Characters that must never reach a terminal raw, so that output cannot be spoofed: control characters
/// (C0, DEL, C1), invisible format characters (bidirectional embeddings, overrides and isolates
/// U+202A–U+202E and U+2066–U+2069, marks such as U+200E, zero-width characters, the byte order mark
/// U+FEFF, soft hyphens, tags) and the line and paragraph separators U+2028 and U+2029.
enum InvisibleCharacters {
    /// Whether `scalar` is one of them.
    static func contains(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// Whether `text` holds any of them.
    static func occur(in text: String) -> Bool {
        text.unicodeScalars.contains(where: contains)
    }

    /// `text` with each of them, except the line breaks in `keeping`, written as a JSON escape (`\u202e`; a
    /// surrogate pair above U+FFFF), which reads the same inside a JSON string. A tab is escaped too: no
    /// output of the tool holds one of its own, so a raw one could only come from stored text.
    static func escaped(_ text: String, keeping: Set<Unicode.Scalar> = ["\n"]) -> String {
        guard text.unicodeScalars.contains(where: { contains($0) && !keeping.contains($0) }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if contains(scalar) && !keeping.contains(scalar) {
                out.append(contentsOf: escape(scalar).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// `\uXXXX` for `scalar` (two of them, a surrogate pair, above U+FFFF).
    static func escape(_ scalar: Unicode.Scalar) -> String {
        UTF16.encode(scalar).map { units in units.map(hex).joined() } ?? hex(0xFFFD)
    }

    private static func hex(_ unit: UInt16) -> String {
        let digits = String(unit, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
    }
}
