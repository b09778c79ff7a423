/// One reply of a Redis/Valkey server, in RESP2 or RESP3.
///
/// RESP3's maps and sets arrive as arrays (a map's keys and values alternating), verbatim strings as bulk
/// strings and big numbers as simple strings: the client needs nothing more.
enum RESPValue: Sendable, Equatable {
    case simple(String)
    case error(String)
    case integer(Int64)
    case bulk([UInt8])
    case null
    case array([RESPValue])
    case double(Double)
    case boolean(Bool)
    /// A RESP3 out-of-band message (pub/sub in RESP3).
    case push([RESPValue])

    /// The bytes of a bulk or simple string.
    var bytes: [UInt8]? {
        switch self {
        case .bulk(let bytes): bytes
        case .simple(let text): Array(text.utf8)
        default: nil
        }
    }

    /// A bulk or simple string as UTF-8 text.
    var text: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    /// An integer, or a string holding one.
    var int: Int64? {
        switch self {
        case .integer(let value): value
        case .bulk, .simple: text.flatMap { Int64($0) }
        default: nil
        }
    }

    /// The elements of an array or push.
    var elements: [RESPValue]? {
        switch self {
        case .array(let values), .push(let values): values
        default: nil
        }
    }

    /// A short description for error messages (never a whole payload).
    var summary: String {
        switch self {
        case .simple(let text): "+\(text.prefix(80))"
        case .error(let text): "-\(text.prefix(200))"
        case .integer(let value): ":\(value)"
        case .bulk(let bytes): "$\(bytes.count) bytes"
        case .null: "null"
        case .array(let values): "array of \(values.count)"
        case .double(let value): ",\(value)"
        case .boolean(let value): "#\(value)"
        case .push(let values): "push of \(values.count)"
        }
    }
}

/// Parses RESP replies out of a growing byte buffer, one at a time, without consuming an incomplete one.
struct RESPParser {
    enum Failure: Error, CustomStringConvertible {
        case protocolError(String)
        var description: String {
            switch self {
            case .protocolError(let text): "protocol error: \(text)"
            }
        }
    }

    static let maxBulkLength = 512 << 20
    static let maxElements = 1 << 24
    static let maxDepth = 32

    private(set) var buffer: [UInt8] = []
    private var start = 0

    /// Appends bytes read from the socket.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 65_536 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Whether bytes are waiting that no reply has consumed yet.
    var hasBufferedBytes: Bool { start < buffer.count }

    /// Forgets everything buffered (after the connection was dropped).
    mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        start = 0
    }

    /// The next complete reply, or nil when more bytes are needed.
    mutating func next() throws(Failure) -> RESPValue? {
        var position = start
        guard let value = try parse(at: &position, depth: 0) else { return nil }
        start = position
        return value
    }

    private func line(at position: inout Int) throws(Failure) -> ArraySlice<UInt8>? {
        var index = position
        while index + 1 < buffer.count {
            if buffer[index] == 13 {
                guard buffer[index + 1] == 10 else { throw .protocolError("a line ends in CR without LF") }
                let slice = buffer[position..<index]
                position = index + 2
                return slice
            }
            index += 1
        }
        if buffer.count - position > 65_536 { throw .protocolError("a reply line is longer than 64 KiB") }
        return nil
    }

    private func integer(_ slice: ArraySlice<UInt8>) throws(Failure) -> Int64 {
        guard let value = Int64(String(decoding: slice, as: UTF8.self)) else {
            throw .protocolError("expected an integer, got \"\(String(decoding: slice.prefix(40), as: UTF8.self))\"")
        }
        return value
    }

    private func parse(at position: inout Int, depth: Int) throws(Failure) -> RESPValue? {
        guard depth <= RESPParser.maxDepth else {
            throw .protocolError("replies nest deeper than \(RESPParser.maxDepth)")
        }
        guard position < buffer.count else { return nil }
        let type = buffer[position]
        var cursor = position + 1
        guard let header = try line(at: &cursor) else { return nil }
        let value: RESPValue
        switch type {
        case UInt8(ascii: "+"): value = .simple(String(decoding: header, as: UTF8.self))
        case UInt8(ascii: "-"): value = .error(String(decoding: header, as: UTF8.self))
        case UInt8(ascii: ":"): value = .integer(try integer(header))
        case UInt8(ascii: "_"): value = .null
        case UInt8(ascii: "#"): value = .boolean(header.first == UInt8(ascii: "t"))
        case UInt8(ascii: ","):
            let text = String(decoding: header, as: UTF8.self)
            switch text {
            case "inf": value = .double(.infinity)
            case "-inf": value = .double(-.infinity)
            default:
                guard let number = Double(text) else { throw .protocolError("expected a double, got \"\(text)\"") }
                value = .double(number)
            }
        case UInt8(ascii: "("): value = .simple(String(decoding: header, as: UTF8.self))
        case UInt8(ascii: "$"), UInt8(ascii: "="), UInt8(ascii: "!"):
            let length = try integer(header)
            if length < 0 {
                value = .null
                break
            }
            guard length <= RESPParser.maxBulkLength else { throw .protocolError("a bulk string of \(length) bytes") }
            let count = Int(length)
            guard cursor + count + 2 <= buffer.count else { return nil }
            guard buffer[cursor + count] == 13, buffer[cursor + count + 1] == 10 else {
                throw .protocolError("a bulk string does not end in CRLF")
            }
            var bytes = Array(buffer[cursor..<(cursor + count)])
            cursor += count + 2
            if type == UInt8(ascii: "=") && bytes.count >= 4 { bytes.removeFirst(4) }  // "txt:" of a verbatim string
            value = type == UInt8(ascii: "!") ? .error(String(decoding: bytes, as: UTF8.self)) : .bulk(bytes)
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"), UInt8(ascii: "%"), UInt8(ascii: "|"):
            let declared = try integer(header)
            if declared < 0 {
                value = .null
                break
            }
            let isMap = type == UInt8(ascii: "%") || type == UInt8(ascii: "|")
            guard declared <= RESPParser.maxElements else { throw .protocolError("an array of \(declared) elements") }
            let count = Int(declared) * (isMap ? 2 : 1)
            var elements: [RESPValue] = []
            elements.reserveCapacity(min(count, 1024))
            for _ in 0..<count {
                guard let element = try parse(at: &cursor, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            if type == UInt8(ascii: "|") {
                // An attribute precedes the real reply: skip it. Attributes in a row count as nesting, so
                // that a server sending them without end meets the depth limit, not the stack's.
                position = cursor
                return try parse(at: &position, depth: depth + 1)
            }
            value = type == UInt8(ascii: ">") ? .push(elements) : .array(elements)
        default:
            throw .protocolError("unknown reply type byte \(type)")
        }
        position = cursor
        return value
    }
}

/// Encodes commands as RESP arrays of bulk strings.
enum RESPCommand {
    /// Appends one command (its arguments as bulk strings) to `out`.
    static func encode(_ arguments: [[UInt8]], into out: inout [UInt8]) {
        out.append(UInt8(ascii: "*"))
        out.append(contentsOf: String(arguments.count).utf8)
        out.append(contentsOf: [13, 10])
        for argument in arguments {
            out.append(UInt8(ascii: "$"))
            out.append(contentsOf: String(argument.count).utf8)
            out.append(contentsOf: [13, 10])
            out.append(contentsOf: argument)
            out.append(contentsOf: [13, 10])
        }
    }
}

extension Array where Element == [UInt8] {
    /// A command from text arguments.
    static func command(_ words: String...) -> [[UInt8]] { words.map { [UInt8]($0.utf8) } }
}
