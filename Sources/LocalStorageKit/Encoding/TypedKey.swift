import CSodium

/// The key that names one record in a store-wide database (the recency indexes, the ghost lists, the load
/// leases): the record's type number (UInt32 big-endian) and then its id's UTF-8.
///
/// LMDB's keys hold at most 511 bytes, and so may an id, so an id longer than 507 bytes is named by its
/// first 475 bytes and the 32-byte BLAKE2b hash of all of it: 511 bytes in all. The type number stays in
/// front, so a walk over one type's entries still meets it, and a shorter id never takes that form (the
/// two could meet only if a hash collided).
enum TypedKey {
    /// The most bytes an LMDB key holds.
    static let maximumLength = 511
    private static let hashLength = 32

    static func make(type: UInt32, id: some Collection<UInt8>) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(maximumLength, 4 + id.count))
        bytes.appendBigEndian(type)
        guard 4 + id.count > maximumLength else {
            bytes.append(contentsOf: id)
            return bytes
        }
        let whole = Array(id)
        bytes.append(contentsOf: whole.prefix(maximumLength - 4 - hashLength))
        var hash = [UInt8](repeating: 0, count: hashLength)
        _ = crypto_generichash(&hash, hashLength, whole, UInt64(whole.count), nil, 0)
        bytes.append(contentsOf: hash)
        return bytes
    }
}
