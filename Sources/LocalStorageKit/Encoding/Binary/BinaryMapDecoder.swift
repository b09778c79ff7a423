/// The location of one map entry's value in the payload.
struct BinaryMapEntry {
    /// The offset of the value.
    let value: Int
    /// The offset just past the value (the next entry).
    let end: Int
}

/// Finds and decodes the entries of one map of the payload; the non-generic core of
/// ``BinaryKeyedDecodingContainer``.
///
/// Kept free of the container's `Key` parameter so that it runs as specialized code: the keyed
/// container is only ever called through `KeyedDecodingContainer`'s box, unspecialized.
/// Keys are matched by comparing UTF-8 bytes in place. The entry after the last one found is tried
/// first (synthesized `init(from:)` asks for keys in the order they were encoded), then the map is scanned.
struct BinaryMapDecoder {
    /// The state shared by the whole decode call.
    let state: BinaryDecodingState
    /// The coding path of the map.
    let path: BinaryCodingPath?
    /// The offset of the first entry.
    let bodyStart: Int
    /// The offset just past the last entry.
    let bodyEnd: Int
    /// This map's slot in the state's key-lookup hints, or -1 if it has none.
    let hintSlot: Int

    // MARK: - Key lookup

    /// The names of all entries, in payload order. Malformed bytes end the list early and are noted, so that
    /// the decode fails (``BinaryDecodingState/noteMalformed(at:)``).
    ///
    /// Complexity: O(n) in the size of the map.
    var allKeyNames: [String] {
        var names: [String] = []
        var offset = bodyStart
        while offset < bodyEnd {
            let name: (value: Int, end: Int)
            let end: Int
            do {
                name = try state.reader.length(at: offset)
                end = try state.reader.skipValue(at: name.end + name.value)
            } catch {
                state.noteMalformed(at: offset)
                break
            }
            guard end <= bodyEnd else {
                state.noteMalformed(at: offset)
                break
            }
            names.append(BinaryReader.string(from: state.reader.bytes(from: name.end, count: name.value)))
            offset = end
        }
        return names
    }

    /// Finds the entry named `name`, or returns `nil` if the map has none.
    ///
    /// Complexity: O(1) when `name` follows the last entry found, otherwise O(n) in the size of the map.
    @inline(__always)
    func entry(named name: String) throws -> BinaryMapEntry? {
        // The hinted entry first, reading the name's UTF-8 in place (a coding key's name is a literal or a
        // native string, so its bytes are contiguous: no copy, no retain).
        if let hint = state.hint(hintSlot), hint >= bodyStart, hint < bodyEnd,
            case let found?? = try name.utf8.withContiguousStorageIfAvailable({ try entry(at: hint, ifNamed: $0) })
        {
            return found
        }
        return try scan(for: name)
    }

    /// Finds the entry named `name` by reading the map from its start.
    private func scan(for name: String) throws -> BinaryMapEntry? {
        var name = name
        return try name.withUTF8 { wanted -> BinaryMapEntry? in
            var offset = bodyStart
            while offset < bodyEnd {
                let keyLength = try state.reader.length(at: offset)
                let valueStart = keyLength.end + keyLength.value
                let valueEnd = try state.reader.valueEnd(at: valueStart)
                guard valueEnd <= bodyEnd else {
                    throw BinaryCodecError.corrupt("entry runs past its map", at: offset)
                }
                if keyLength.value == wanted.count && equal(wanted, at: keyLength.end) {
                    return BinaryMapEntry(value: valueStart, end: valueEnd)
                }
                offset = valueEnd
            }
            return nil
        }
    }

    /// Returns the entry at `offset` if its key is `wanted`.
    @inline(__always)
    private func entry(at offset: Int, ifNamed wanted: UnsafeBufferPointer<UInt8>) throws -> BinaryMapEntry? {
        let keyLength = try state.reader.length(at: offset)
        guard keyLength.value == wanted.count, equal(wanted, at: keyLength.end) else {
            return nil
        }
        let valueStart = keyLength.end + keyLength.value
        let valueEnd = try state.reader.valueEnd(at: valueStart)
        guard valueEnd <= bodyEnd else {
            throw BinaryCodecError.corrupt("entry runs past its map", at: offset)
        }
        return BinaryMapEntry(value: valueStart, end: valueEnd)
    }

    /// Returns whether the bytes at `offset` equal `wanted`; the caller has checked they are in bounds.
    @inline(__always)
    private func equal(_ wanted: UnsafeBufferPointer<UInt8>, at offset: Int) -> Bool {
        let stored = state.reader.bytes(from: offset, count: wanted.count)
        for index in 0..<wanted.count where stored[index] != wanted[index] {
            return false
        }
        return true
    }

    /// Finds the entry for `key`, throwing `keyNotFound` if the map has none.
    func requireEntry(_ key: any CodingKey) throws -> BinaryMapEntry {
        guard let entry = try entry(named: key.stringValue) else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(
                    codingPath: BinaryCodingPath.keys(path),
                    debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."
                ))
        }
        return entry
    }

    /// Returns whether the value for `key` is nil; throws `keyNotFound` if the key is missing.
    func isNil(_ key: any CodingKey) throws -> Bool {
        try state.isNil(at: try requireEntry(key).value)
    }

    // MARK: - Decoding

    /// Decodes the value for `key` with `read`.
    @inline(__always)
    private func decode<T>(
        _ key: any CodingKey, _ read: (Int, BinaryDecodingState.PathBuilder) throws -> T
    ) throws -> T {
        let entry = try requireEntry(key)
        let path = path
        let value = try read(entry.value) { BinaryCodingPath.keys(path, appending: key) }
        state.setHint(hintSlot, to: entry.end)
        return value
    }

    /// Decodes the value for `key` with `read`, or returns `nil` if the key is missing or its value is nil.
    @inline(__always)
    private func decodeIfPresent<T>(
        _ key: any CodingKey, _ read: (Int, BinaryDecodingState.PathBuilder) throws -> T
    ) throws -> T? {
        guard let entry = try entry(named: key.stringValue) else {
            return nil
        }
        state.setHint(hintSlot, to: entry.end)
        if try state.isNil(at: entry.value) {
            return nil
        }
        let path = path
        return try read(entry.value) { BinaryCodingPath.keys(path, appending: key) }
    }

    /// Decodes a Boolean.
    func decodeBool(_ key: any CodingKey) throws -> Bool {
        try decode(key) { try state.decodeBool(at: $0, path: $1) }
    }

    /// Decodes a string.
    func decodeString(_ key: any CodingKey) throws -> String {
        try decode(key) { try state.decodeString(at: $0, path: $1) }
    }

    /// Decodes a `Double`.
    func decodeDouble(_ key: any CodingKey) throws -> Double {
        try decode(key) { try state.decodeDouble(at: $0, path: $1) }
    }

    /// Decodes a `Float`.
    func decodeFloat(_ key: any CodingKey) throws -> Float {
        try decode(key) { try state.decodeFloat(at: $0, path: $1) }
    }

    /// Decodes an integer of any width.
    func decodeInteger<Integer: FixedWidthInteger>(_ type: Integer.Type, _ key: any CodingKey) throws -> Integer {
        try decode(key) { try state.decodeInteger(type, at: $0, path: $1) }
    }

    /// Decodes any `Decodable` value.
    func decodeValue<T: Decodable>(_ type: T.Type, _ key: any CodingKey) throws -> T {
        try decode(key) { offset, _ in try state.decodeValue(type, at: offset, path: path, key: key) }
    }

    /// Decodes a Boolean, or `nil` if the key is missing or its value is nil.
    func decodeBoolIfPresent(_ key: any CodingKey) throws -> Bool? {
        try decodeIfPresent(key) { try state.decodeBool(at: $0, path: $1) }
    }

    /// Decodes a string, or `nil` if the key is missing or its value is nil.
    func decodeStringIfPresent(_ key: any CodingKey) throws -> String? {
        try decodeIfPresent(key) { try state.decodeString(at: $0, path: $1) }
    }

    /// Decodes a `Double`, or `nil` if the key is missing or its value is nil.
    func decodeDoubleIfPresent(_ key: any CodingKey) throws -> Double? {
        try decodeIfPresent(key) { try state.decodeDouble(at: $0, path: $1) }
    }

    /// Decodes a `Float`, or `nil` if the key is missing or its value is nil.
    func decodeFloatIfPresent(_ key: any CodingKey) throws -> Float? {
        try decodeIfPresent(key) { try state.decodeFloat(at: $0, path: $1) }
    }

    /// Decodes an integer of any width, or `nil` if the key is missing or its value is nil.
    func decodeIntegerIfPresent<Integer: FixedWidthInteger>(
        _ type: Integer.Type, _ key: any CodingKey
    ) throws -> Integer? {
        try decodeIfPresent(key) { try state.decodeInteger(type, at: $0, path: $1) }
    }

    /// Decodes any `Decodable` value, or `nil` if the key is missing or its value is nil.
    func decodeValueIfPresent<T: Decodable>(_ type: T.Type, _ key: any CodingKey) throws -> T? {
        try decodeIfPresent(key) { offset, _ in try state.decodeValue(type, at: offset, path: path, key: key) }
    }

    // MARK: - Nested values

    /// Returns the value for `key` as a keyed container.
    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: any CodingKey
    ) throws -> BinaryKeyedDecodingContainer<NestedKey> {
        let entry = try requireEntry(key)
        let container = try state.keyedContainer(keyedBy: type, at: entry.value, path: try childPath(key))
        state.setHint(hintSlot, to: entry.end)
        return container
    }

    /// Returns the value for `key` as an unkeyed container.
    func nestedUnkeyedContainer(forKey key: any CodingKey) throws -> BinaryUnkeyedDecodingContainer {
        let entry = try requireEntry(key)
        let container = try state.unkeyedContainer(at: entry.value, path: try childPath(key))
        state.setHint(hintSlot, to: entry.end)
        return container
    }

    /// Returns a decoder for the value of `key`, or for nil if the map has no such key (as in JSON).
    func superDecoder(forKey key: any CodingKey) throws -> BinaryDecoderImpl {
        let offset = try entry(named: key.stringValue)?.value ?? BinaryReader.virtualNullOffset
        return BinaryDecoderImpl(state: state, offset: offset, path: try childPath(key))
    }

    /// Returns the coding path of the value of `key`, checking the nesting limit.
    private func childPath(_ key: any CodingKey) throws -> BinaryCodingPath {
        let child = BinaryCodingPath(parent: path, key: key)
        guard child.depth <= BinaryFormat.maximumDepth else {
            throw BinaryCodecError.corrupt("nesting deeper than \(BinaryFormat.maximumDepth)", at: bodyStart)
        }
        return child
    }
}
