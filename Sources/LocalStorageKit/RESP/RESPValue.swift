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
///
/// Parsing resumes where it stopped: the arrays of a reply that is not complete yet are kept with the elements
/// parsed so far, and a bulk string is not looked at again until all its bytes are in. (Parsing a large reply
/// from its start after every read cost time quadratic in its size: a catch-up's `MGET` of large records could
/// not finish within its timeout.)
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
    /// The most bytes one reply may take, whatever its elements: a server that streams one without end fails.
    static let maxReplyBytes = 1 << 30

    private(set) var buffer: [UInt8] = []
    /// Where the reply being parsed begins.
    private var start = 0
    /// Where parsing resumes: past everything the aggregates in `open` hold.
    private var resume = 0
    /// The aggregates (arrays, maps, pushes, attributes) of the reply being parsed that are not complete yet,
    /// outermost first.
    private var open: [OpenAggregate] = []
    /// How many bytes the buffer needs before parsing can get further (the end of a bulk string it waits for).
    private var needed = 0
    /// Attributes met in a row before the value they describe: they count as nesting, so that a server sending
    /// them without end meets the depth limit.
    private var attributesInARow = 0
    /// How many bytes of bulk strings were copied out of the buffer: each once, however the reply was cut.
    private(set) var bulkBytesCopied = 0

    private struct OpenAggregate {
        let type: UInt8
        var elements: [RESPValue]
        var left: Int
    }

    /// One thing at a position: a whole value, or the header of an aggregate whose elements follow.
    private enum Item {
        case value(RESPValue)
        case aggregate(type: UInt8, count: Int)
    }

    /// Appends bytes read from the socket.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            forget(start)
        } else if start > 65_536 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            forget(start)
        }
        buffer.append(contentsOf: bytes)
    }

    /// Moves the positions back by `removed` bytes taken from the buffer's front.
    private mutating func forget(_ removed: Int) {
        start -= removed
        resume -= removed
        needed = max(0, needed - removed)
    }

    /// Whether bytes are waiting that no reply has consumed yet.
    var hasBufferedBytes: Bool { start < buffer.count }

    /// Forgets everything buffered (after the connection was dropped).
    mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        start = 0
        resume = 0
        open = []
        needed = 0
        attributesInARow = 0
    }

    /// The next complete reply, or nil when more bytes are needed.
    mutating func next() throws(Failure) -> RESPValue? {
        guard buffer.count >= needed else { return nil }
        guard buffer.count - start <= RESPParser.maxReplyBytes else {
            throw .protocolError("a reply longer than \(RESPParser.maxReplyBytes) bytes")
        }
        var position = resume
        while true {
            var wanted = 0
            guard let item = try item(at: &position, wanted: &wanted) else {
                needed = max(wanted, buffer.count + 1)
                return nil
            }
            var value: RESPValue
            switch item {
            case .value(let complete):
                value = complete
            case .aggregate(let type, let count):
                guard open.count + attributesInARow < RESPParser.maxDepth else {
                    throw .protocolError("replies nest deeper than \(RESPParser.maxDepth)")
                }
                resume = position
                if count > 0 {
                    var elements: [RESPValue] = []
                    elements.reserveCapacity(min(count, 1024))
                    open.append(OpenAggregate(type: type, elements: elements, left: count))
                    continue
                }
                // An empty attribute: the value it describes follows.
                if type == UInt8(ascii: "|") {
                    attributesInARow += 1
                    continue
                }
                value = RESPParser.aggregate(type, [])
            }
            // The value goes into the aggregate it belongs to, which may complete it, and so on outwards.
            attributesInARow = 0
            while true {
                guard var innermost = open.popLast() else {
                    start = position
                    resume = position
                    needed = 0
                    return value
                }
                innermost.elements.append(value)
                innermost.left -= 1
                if innermost.left > 0 {
                    open.append(innermost)
                    break
                }
                // An attribute precedes the value it describes, which comes next at the same level: dropped.
                if innermost.type == UInt8(ascii: "|") {
                    attributesInARow += 1
                    break
                }
                value = RESPParser.aggregate(innermost.type, innermost.elements)
            }
            resume = position
        }
    }

    private static func aggregate(_ type: UInt8, _ elements: [RESPValue]) -> RESPValue {
        type == UInt8(ascii: ">") ? .push(elements) : .array(elements)
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

    /// The value or aggregate header at `position`, moving it past; nil (and `position` unmoved) when its bytes
    /// are not all in, with `wanted` set to the buffer's count it needs when that is known.
    private mutating func item(at position: inout Int, wanted: inout Int) throws(Failure) -> Item? {
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
            guard cursor + count + 2 <= buffer.count else {
                wanted = cursor + count + 2
                return nil
            }
            guard buffer[cursor + count] == 13, buffer[cursor + count + 1] == 10 else {
                throw .protocolError("a bulk string does not end in CRLF")
            }
            var bytes = Array(buffer[cursor..<(cursor + count)])
            bulkBytesCopied += count
            cursor += count + 2
            if type == UInt8(ascii: "=") && bytes.count >= 4 { bytes.removeFirst(4) }  // "txt:" of a verbatim string
            value = type == UInt8(ascii: "!") ? .error(String(decoding: bytes, as: UTF8.self)) : .bulk(bytes)
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"), UInt8(ascii: "%"), UInt8(ascii: "|"):
            let declared = try integer(header)
            if declared < 0 {
                value = .null
                break
            }
            guard declared <= RESPParser.maxElements else { throw .protocolError("an array of \(declared) elements") }
            let isMap = type == UInt8(ascii: "%") || type == UInt8(ascii: "|")
            position = cursor
            return .aggregate(type: type, count: Int(declared) * (isMap ? 2 : 1))
        default:
            throw .protocolError("unknown reply type byte \(type)")
        }
        position = cursor
        return .value(value)
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
