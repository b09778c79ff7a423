import Foundation

/// The state one ``BinaryDecoder/decode(_:from:)`` call shares between its decoders and containers.
///
/// It holds the reader over the borrowed bytes, the typed value readers with `JSONDecoder`'s
/// leniency, and a stack of key-lookup hints, one per open keyed container.
///
/// A plain value of three words: copying it into a container costs no reference counting, and
/// the hint slots live in memory the decode call allocates on its stack
/// (``BinaryDecoder/decode(_:from:)``), so a decode makes no heap allocation for its state. Like the
/// bytes, the state is valid only during the decode call; containers must not outlive it.
struct BinaryDecodingState {
    /// Builds the coding path of a value on demand, for errors.
    typealias PathBuilder = () -> [any CodingKey]

    /// The reader over the payload.
    let reader: BinaryReader

    /// Room on a caller's stack for the hint slots, their count and the malformed word.
    typealias Storage = InlineArray<34, Int>

    /// The number of key-lookup hint slots; keyed containers nested deeper get none and scan.
    static let hintCapacity = Storage.count - 2

    /// The number of `Int` words ``init(reader:storage:)`` needs: the slots, their count, the malformed word.
    static let storageWords = Storage.count
    /// The word after the slots: 1 + the offset of the malformed bytes noted (``noteMalformed(at:)``), or 0.
    private static let malformedWord = hintCapacity + 1

    /// Word 0: the number of hint slots in use; words 1...hintCapacity: the slots.
    ///
    /// Each slot holds, for one open keyed container, the offset of the entry most likely to be
    /// asked for next. Synthesized `init(from:)` asks for keys in declaration order, the order they
    /// were encoded in, so the entry after the last one found is usually the next one wanted. Slots
    /// are released when the value that made them is decoded. Raw memory (a `let` pointer), so
    /// reading and writing them needs no exclusivity checks.
    private let storage: UnsafeMutablePointer<Int>

    /// Creates the state for decoding from `reader`, keeping its hints in `storage`, which must hold
    /// ``storageWords`` words and stay valid while the state is used.
    init(reader: BinaryReader, storage: UnsafeMutablePointer<Int>) {
        self.reader = reader
        self.storage = storage
        storage[0] = 0
        storage[Self.malformedWord] = 0
    }

    /// Notes malformed bytes met where `Decoder` allows no throw (`contains`, `allKeys`, `decodeNil()`, which
    /// answer "absent"): the decode fails at its end (``malformedOffset``) instead of losing members.
    func noteMalformed(at offset: Int) {
        if storage[Self.malformedWord] == 0 { storage[Self.malformedWord] = offset + 1 }
    }

    /// Where the first malformed bytes noted are, or nil.
    var malformedOffset: Int? { storage[Self.malformedWord] == 0 ? nil : storage[Self.malformedWord] - 1 }

    /// The number of hint slots in use.
    private var hintCount: Int {
        get { storage[0] }
        nonmutating set { storage[0] = newValue }
    }

    // MARK: - Key-lookup hints

    /// Allocates a hint slot for a new keyed container and returns its index, or -1 if none is free.
    @inline(__always)
    func makeHint(startingAt offset: Int) -> Int {
        let count = hintCount
        guard count < Self.hintCapacity else {
            return -1
        }
        storage[count + 1] = offset
        hintCount = count + 1
        return count + 1
    }

    /// Returns the hint in `slot`, or `nil` for a container without a slot.
    @inline(__always)
    func hint(_ slot: Int) -> Int? {
        slot > 0 ? storage[slot] : nil
    }

    /// Stores `offset` as the hint in `slot`.
    @inline(__always)
    func setHint(_ slot: Int, to offset: Int) {
        if slot > 0 {
            storage[slot] = offset
        }
    }

    // MARK: - Generic values

    /// `[String]`, looked up once: comparing with `[String].self` in place would fetch the generic
    /// type's metadata from the runtime's cache on every value decoded in unspecialized code.
    private static let stringArrayType = ObjectIdentifier([String].self)

    /// Decodes a `T` from the value at `offset`, the value of `key` in the container at `path`.
    func decodeValue<T: Decodable>(
        _ type: T.Type, at offset: Int, path: BinaryCodingPath?, key: (any CodingKey)?
    ) throws -> T {
        func fullPath() -> [any CodingKey] {
            BinaryCodingPath.keys(path, appending: key)
        }
        if T.self == String.self {
            return reinterpret(try decodeString(at: offset, path: fullPath), as: T.self)
        } else if T.self == Int.self {
            return reinterpret(try decodeInteger(Int.self, at: offset, path: fullPath), as: T.self)
        } else if T.self == Double.self {
            return reinterpret(try decodeDouble(at: offset, path: fullPath), as: T.self)
        } else if T.self == Bool.self {
            return reinterpret(try decodeBool(at: offset, path: fullPath), as: T.self)
        } else if T.self == Date.self {
            return reinterpret(try decodeDate(at: offset, path: fullPath), as: T.self)
        } else if ObjectIdentifier(T.self) == Self.stringArrayType {
            return reinterpret(try decodeStringArray(at: offset, path: fullPath), as: T.self)
        } else if Self.rareScalarTypes.contains(ObjectIdentifier(T.self)) {
            return try decodeRareScalar(type, at: offset, path: fullPath)
        }
        let childPath = BinaryCodingPath.appending(key, to: path)
        guard BinaryCodingPath.depth(of: childPath) <= BinaryFormat.maximumDepth else {
            throw BinaryCodecError.corrupt("nesting deeper than \(BinaryFormat.maximumDepth)", at: offset)
        }
        let savedHintCount = hintCount
        defer { hintCount = savedHintCount }
        return try T(from: BinaryDecoderImpl(state: self, offset: offset, path: childPath))
    }

    // MARK: - Containers

    /// Opens the map at `offset` as a keyed container.
    func keyedContainer<Key: CodingKey>(
        keyedBy type: Key.Type, at offset: Int, path: BinaryCodingPath?
    ) throws -> BinaryKeyedDecodingContainer<Key> {
        let tag = try reader.tag(at: offset)
        guard tag == BinaryFormat.Tag.map else {
            throw try containerMismatch(
                [String: Any].self, tag: tag, at: offset, path: { BinaryCodingPath.keys(path) }, what: "keyed"
            )
        }
        let header = try reader.containerHeader(at: offset)
        return BinaryKeyedDecodingContainer(
            map: BinaryMapDecoder(
                state: self,
                path: path,
                bodyStart: header.bodyStart,
                bodyEnd: header.bodyEnd,
                hintSlot: makeHint(startingAt: header.bodyStart)
            ))
    }

    /// Opens the array at `offset` as an unkeyed container.
    func unkeyedContainer(at offset: Int, path: BinaryCodingPath?) throws -> BinaryUnkeyedDecodingContainer {
        let tag = try reader.tag(at: offset)
        guard tag == BinaryFormat.Tag.array else {
            throw try containerMismatch(
                [Any].self, tag: tag, at: offset, path: { BinaryCodingPath.keys(path) }, what: "unkeyed"
            )
        }
        let header = try reader.containerHeader(at: offset)
        return BinaryUnkeyedDecodingContainer(
            state: self,
            path: path,
            bodyStart: header.bodyStart,
            bodyEnd: header.bodyEnd,
            elementCount: header.count
        )
    }

    /// Decodes an array of strings without a container: what `[String](from:)` does, faster.
    private func decodeStringArray(at offset: Int, path: PathBuilder) throws -> [String] {
        let tag = try reader.tag(at: offset)
        guard tag == BinaryFormat.Tag.array else {
            throw try containerMismatch([Any].self, tag: tag, at: offset, path: path, what: "unkeyed")
        }
        let header = try reader.containerHeader(at: offset)
        var strings: [String] = []
        strings.reserveCapacity(header.count)
        var position = header.bodyStart
        for index in 0..<header.count {
            guard position < header.bodyEnd else {
                throw BinaryCodecError.corrupt("array holds fewer elements than its count", at: offset)
            }
            strings.append(try decodeString(at: position) { path() + [BinaryCodingKey.index(index)] })
            position = try reader.skipValue(at: position)
        }
        guard position <= header.bodyEnd else {
            throw BinaryCodecError.corrupt("element runs past its array", at: offset)
        }
        return strings
    }

    /// Returns the error for asking a container of a value that is not one.
    private func containerMismatch(
        _ type: Any.Type, tag: UInt8, at offset: Int, path: PathBuilder, what: String
    ) throws -> DecodingError {
        guard let kind = BinaryReader.kind(of: tag) else {
            throw BinaryCodecError.corrupt("unknown tag 0x\(String(tag, radix: 16))", at: offset)
        }
        let keys = path()
        if tag == BinaryFormat.Tag.null {
            return DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: keys,
                    debugDescription: "Cannot get \(what) decoding container -- found null value instead"
                ))
        }
        return DecodingError.typeMismatch(
            type,
            DecodingError.Context(
                codingPath: keys,
                debugDescription: "Expected to decode \(type) but found \(kind) instead."
            ))
    }

    // MARK: - Scalars

    /// Returns whether the value at `offset` is nil.
    @inline(__always)
    func isNil(at offset: Int) throws -> Bool {
        try reader.tag(at: offset) == BinaryFormat.Tag.null
    }

    /// Decodes a Boolean.
    func decodeBool(at offset: Int, path: PathBuilder) throws -> Bool {
        let tag = try reader.tag(at: offset)
        if tag == BinaryFormat.Tag.boolTrue {
            return true
        } else if tag == BinaryFormat.Tag.boolFalse {
            return false
        }
        throw try mismatch(Bool.self, at: offset, path: path)
    }

    /// Decodes a string.
    @inline(__always)
    func decodeString(at offset: Int, path: PathBuilder) throws -> String {
        guard let utf8 = try reader.stringBytes(at: offset) else {
            throw try mismatch(String.self, at: offset, path: path)
        }
        return BinaryReader.string(from: utf8)
    }

    /// Decodes an integer of any width from any number that it holds exactly, as `JSONDecoder` does.
    func decodeInteger<Integer: FixedWidthInteger>(
        _ type: Integer.Type, at offset: Int, path: PathBuilder
    ) throws -> Integer {
        let tag = try reader.tag(at: offset)
        if tag <= BinaryFormat.Tag.positiveFixIntMax, let value = Integer(exactly: tag) {
            return value
        }
        let converted: Integer?
        switch try reader.number(at: offset) {
        case .signed(let value)?: converted = Integer(exactly: value)
        case .unsigned(let value)?: converted = Integer(exactly: value)
        case .double(let value)?: converted = Integer(exactly: value)
        case .float(let value)?: converted = Integer(exactly: value)
        case .text(let text)?: converted = Integer(text) ?? Double(text).flatMap { Integer(exactly: $0) }
        case nil: throw try mismatch(type, at: offset, path: path)
        }
        guard let converted else {
            throw try notRepresentable(type, at: offset, path: path)
        }
        return converted
    }

    /// Decodes a `Double` from any number, as `JSONDecoder` does.
    func decodeDouble(at offset: Int, path: PathBuilder) throws -> Double {
        let tag = try reader.tag(at: offset)
        if tag == BinaryFormat.Tag.float64 {
            return Double(bitPattern: try reader.fixed(UInt64.self, afterTagAt: offset))
        }
        switch try reader.number(at: offset) {
        case .double(let value)?: return value
        case .signed(let value)?: return Double(value)
        case .unsigned(let value)?: return Double(value)
        // JSON shows a Float as its shortest description; read that text back as a Double.
        case .float(let value)?: return Double(value.description) ?? Double(value)
        case .text(let text)?:
            guard let value = Double(text), value.isFinite else {
                throw try notRepresentable(Double.self, at: offset, path: path)
            }
            return value
        case nil: throw try mismatch(Double.self, at: offset, path: path)
        }
    }

    /// Decodes a `Float` from any number that fits its range, as `JSONDecoder` does.
    func decodeFloat(at offset: Int, path: PathBuilder) throws -> Float {
        let value: Float
        switch try reader.number(at: offset) {
        case .float(let float)?: return float
        case .double(let double)?:
            value = Float(double)
            if double.isFinite && !value.isFinite {
                throw try notRepresentable(Float.self, at: offset, path: path)
            }
            return value
        case .signed(let int)?: return Float(int)
        case .unsigned(let int)?: return Float(int)
        case .text(let text)?:
            guard let float = Float(text), float.isFinite else {
                throw try notRepresentable(Float.self, at: offset, path: path)
            }
            return float
        case nil: throw try mismatch(Float.self, at: offset, path: path)
        }
    }

    /// Decodes a `Date` from any number of seconds since the reference date.
    func decodeDate(at offset: Int, path: PathBuilder) throws -> Date {
        Date(timeIntervalSinceReferenceDate: try decodeDouble(at: offset, path: path))
    }

    /// Decodes `Data` from binary data or from a Base64 string (what `JSONEncoder` writes).
    func decodeData(at offset: Int, path: PathBuilder) throws -> Data {
        if let bytes = try reader.binaryBytes(at: offset) {
            return Data(bytes)
        }
        guard let utf8 = try reader.stringBytes(at: offset) else {
            throw try mismatch(Data.self, at: offset, path: path)
        }
        guard let data = Data(base64Encoded: BinaryReader.string(from: utf8)) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: path(),
                    debugDescription: "Encountered Data is not valid Base64."
                ))
        }
        return data
    }

    /// Decodes a `URL` from its string.
    func decodeURL(at offset: Int, path: PathBuilder) throws -> URL {
        let string = try decodeString(at: offset, path: path)
        guard let url = URL(string: string) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: path(),
                    debugDescription: "Invalid URL string."
                ))
        }
        return url
    }

    /// Decodes a `Decimal` from any number, reading floats through their shortest text as JSON shows them.
    func decodeDecimal(at offset: Int, path: PathBuilder) throws -> Decimal {
        let decimal: Decimal?
        switch try reader.number(at: offset) {
        case .text(let text)?: decimal = Decimal(string: text)
        case .signed(let value)?: decimal = Decimal(value)
        case .unsigned(let value)?: decimal = Decimal(value)
        case .double(let value)?: decimal = value.isFinite ? Decimal(string: value.description) : nil
        case .float(let value)?: decimal = value.isFinite ? Decimal(string: value.description) : nil
        case nil: throw try mismatch(Decimal.self, at: offset, path: path)
        }
        guard let decimal else {
            throw try notRepresentable(Decimal.self, at: offset, path: path)
        }
        return decimal
    }
}

/// Returns `value` as a `Target`; callers must have checked that `Value` and `Target` are the same type.
@inline(__always)
func reinterpret<Value, Target>(_ value: Value, as target: Target.Type) -> Target {
    unsafeBitCast(value, to: Target.self)
}
