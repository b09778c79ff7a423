import Foundation

/// The ID argument of `get` and `delete`: as given, or with `--escaped` in JSON string escapes, so that
/// ids holding `0x00` or other control characters (which a command line cannot carry) can be named.
enum IdentifierArgument {
    /// The lines `--help` prints about it.
    static let help = """
        ID is taken as given. With --escaped it is read as the inside of a JSON string: \\u0000 for
        the 0x00 byte (or any \\uXXXX), \\n, \\t, \\" and \\\\ for a backslash, so ids with control
        characters can be named (list --json spells ids that way; list shows them quoted). An ID that
        begins with - goes after --, which ends the options: get TYPE -- -ID.
        """

    /// The id the command line names (the second positional argument).
    static func id(_ arguments: ParsedArguments) throws(UsageError) -> String {
        let text = arguments.positionals[1]
        guard arguments.has("escaped") else { return text }
        return try unescaped(text)
    }

    /// `text` read as the inside of a JSON string literal.
    static func unescaped(_ text: String) throws(UsageError) -> String {
        let literal = "\"" + text + "\""
        let decoded: String
        do {
            decoded = try JSONDecoder().decode(String.self, from: Data(literal.utf8))
        } catch {
            throw UsageError("--escaped: \"\(text)\" is not valid JSON string escapes (\\uXXXX, \\n, \\t, \\\\ …)")
        }
        return decoded
    }

    /// `id` for a line of text output: as it is, or as a quoted JSON string when it holds a control
    /// character or an invisible format character (bidirectional overrides, a byte order mark …; see
    /// ``InvisibleCharacters``), or begins or ends with white space (which the columns' padding would hide), so
    /// that it cannot disguise itself or the output around it.
    static func displayed(_ id: String) -> String {
        // An id that begins with a quote is quoted and escaped too: as it is, `"a\u0000"` would read like the
        // escaped form of another id (`a` and `0x00`).
        let padded = id.first?.isWhitespace == true || id.last?.isWhitespace == true
        guard InvisibleCharacters.occur(in: id) || id.hasPrefix("\"") || padded else { return id }
        return quoted(id)
    }

    /// `id` as a quoted JSON string, for text that always quotes an id: quotes, backslashes, control and invisible
    /// characters escaped, so that the id `a\u0000b` (with a backslash) and `a`, NUL, `b` print differently.
    static func quoted(_ id: String) -> String {
        var out = "\""
        for scalar in id.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case _ where InvisibleCharacters.contains(scalar): out += InvisibleCharacters.escape(scalar)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
