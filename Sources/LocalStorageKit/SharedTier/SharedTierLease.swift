/// What a lease key on the shared tier (`{ns}:lease:{type}:{id}`, see ``SharedTierLayout``) holds: a load
/// under way on some instance, or the remembered nil of a finished one (or of one a delete voided).
///
/// Value layout (17 bytes): kind (`L` or `A`), token (8 bytes big-endian), and for `A` the time (ns since
/// 1970, 8 bytes big-endian) until which the nil is remembered (0 for a lease). The key's own `PX` time to
/// live ends it on the server: a holder that dies leaves a lease that vanishes by itself.
struct SharedTierLease: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        /// A load under way, under `token`.
        case lease = 0x4C  // "L"
        /// The load under `token` found nothing, or a delete voided it: remembered until `rememberUntil` (at or
        /// before the time it was written, `Int64.min` for a delete's: only the callers that waited on that load
        /// get the nil).
        case absent = 0x41  // "A"
    }

    static let size = 17

    var kind: Kind
    var token: UInt64
    var rememberUntil: Int64

    init(kind: Kind, token: UInt64, rememberUntil: Int64 = 0) {
        self.kind = kind
        self.token = token
        self.rememberUntil = rememberUntil
    }

    /// Parses a stored value; nil for one this version cannot read.
    init?(_ bytes: [UInt8]) {
        guard bytes.count == SharedTierLease.size, let kind = Kind(rawValue: bytes[0]) else { return nil }
        self.kind = kind
        token = bytes[1..<9].reduce(0) { $0 << 8 | UInt64($1) }
        rememberUntil = Int64(bitPattern: bytes[9..<17].reduce(0) { $0 << 8 | UInt64($1) })
    }

    var bytes: [UInt8] {
        var out: [UInt8] = [kind.rawValue]
        out.reserveCapacity(SharedTierLease.size)
        out.appendBigEndian(token)
        out.appendBigEndian(UInt64(bitPattern: rememberUntil))
        return out
    }

    /// Whether this is a remembered nil still in force at `now`.
    func remembersAbsence(at now: Int64) -> Bool {
        kind == .absent && rememberUntil > now
    }
}

/// The lease a load's record write was made under was voided (a write of the id by some instance came
/// first, or it expired): nothing was written.
struct SharedTierLeaseLost: Error {
    /// The server lost its data (`FLUSHALL`, a restart without it): neither the lease nor the namespace's sequence is
    /// there; otherwise a write of the id ended or voided the lease.
    var gone = false
}
