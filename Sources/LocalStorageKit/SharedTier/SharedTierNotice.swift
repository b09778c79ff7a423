/// A change notice as it arrives: `seq notice [record]`.
struct SharedTierNotice {
    let sequence: Int64
    let kind: UInt8
    let database: UInt32
    let sender: [UInt8]
    let type: String
    let id: String
    let record: [UInt8]

    init?(_ bytes: [UInt8]) {
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")),
            let sequence = Int64(String(decoding: bytes[..<space], as: UTF8.self))
        else { return nil }
        var offset = space + 1
        func take(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, offset + count <= bytes.count else { return nil }
            defer { offset += count }
            return bytes[offset..<(offset + count)]
        }
        func number(_ count: Int) -> Int? {
            take(count).map { $0.reduce(0) { $0 << 8 | Int($1) } }
        }
        guard let kind = take(1)?.first, let database = number(4), let sender = take(16),
            let typeLength = number(2), let type = take(typeLength), let idLength = number(2),
            let id = take(idLength)
        else { return nil }
        self.sequence = sequence
        self.kind = kind
        self.database = UInt32(truncatingIfNeeded: database)
        self.sender = Array(sender)
        self.type = String(decoding: type, as: UTF8.self)
        self.id = String(decoding: id, as: UTF8.self)
        record = Array(bytes[offset...])
    }
}

extension SharedTierNotice {
    /// What tells this change from another given the same sequence (by a history the server lost and wrote
    /// again): all but the record's bytes, which the log does not keep. Compared within one process only.
    var identity: Int {
        var hasher = Hasher()
        hasher.combine(sequence)
        hasher.combine(kind)
        hasher.combine(database)
        hasher.combine(sender)
        hasher.combine(type)
        hasher.combine(id)
        return hasher.finalize()
    }
}
