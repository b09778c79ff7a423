/// What the `leases` database holds for one (type, id): a load under way, the remembered nil of a
/// finished one, or the mark of a load a write ended.
///
/// Value layout (little-endian, 37 bytes): kind (1), owner host (8), owner pid (4), owner start time (8),
/// token (8), deadline in ns since 1970 (8).
struct LeaseEntry: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        /// A load under way: `owner` runs it until `deadline`, under `token`.
        case lease = 1
        /// The load under `token` found nothing: calls until `deadline` return nil without loading (a
        /// deadline at or before the moment it was written only answers the callers that waited on it).
        case absent = 2
        /// A write of the id that stored a record (the load's own result, or a save or update that won over it)
        /// ended the load under `token`: its waiters read that record, and when it is gone by then (evicted,
        /// expired) they load again; nil answers only what a load found or a delete left (review-107 A4). Its
        /// waiters in a version that cannot read this kind see no entry, and do the same.
        case written = 3
    }

    static let size = 37

    var kind: Kind
    var owner: ProcessIdentity
    var token: UInt64
    var deadline: Int64

    /// Whether this is a lease that still holds at `now`: its deadline has not passed and its holder is
    /// not known to be gone.
    func holds(at now: Int64) -> Bool {
        kind == .lease && deadline > now && !owner.isGone
    }

    /// Whether this is a remembered nil still in force at `now`.
    func remembersAbsence(at now: Int64) -> Bool {
        kind == .absent && deadline > now
    }

    /// The marker of `kind` this entry becomes when a write ends it at `now`, under the same owner and token; its
    /// deadline is half the sweep's grace earlier, so that it stays ended however far a commit's time runs ahead of
    /// the clock (each commit is at least a nanosecond after the last, and the clock may step back), and it is
    /// swept about half a minute after it was written (review-86 #5).
    func ended(as kind: Kind, now: Int64) -> LeaseEntry {
        let grace = LeaseBook.sweepGrace / 2
        return LeaseEntry(
            kind: kind, owner: owner, token: token, deadline: now > Int64.min + grace ? now - grace : .min)
    }

    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(LeaseEntry.size)
        bytes.append(kind.rawValue)
        bytes.appendLittleEndian(owner.host)
        bytes.appendLittleEndian(UInt32(bitPattern: owner.pid))
        bytes.appendLittleEndian(owner.started)
        bytes.appendLittleEndian(token)
        bytes.appendLittleEndian(UInt64(bitPattern: deadline))
        return bytes
    }

    /// Parses a stored entry; nil for one this version cannot read (treated as no entry).
    init?(_ stored: UnsafeRawBufferPointer) {
        guard stored.count >= LeaseEntry.size, let kind = Kind(rawValue: stored[0]) else { return nil }
        self.kind = kind
        owner = ProcessIdentity(
            host: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 1, as: UInt64.self)),
            pid: Int32(bitPattern: UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: 9, as: UInt32.self))),
            started: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 13, as: UInt64.self)))
        token = UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 21, as: UInt64.self))
        deadline = Int64(bitPattern: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 29, as: UInt64.self)))
    }

    init(kind: Kind, owner: ProcessIdentity, token: UInt64, deadline: Int64) {
        self.kind = kind
        self.owner = owner
        self.token = token
        self.deadline = deadline
    }
}
