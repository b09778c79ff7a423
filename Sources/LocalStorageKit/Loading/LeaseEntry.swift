/// What the `leases` database holds for one (type, id): a load under way, the remembered nil of a
/// finished one, or the mark of a load a write ended.
///
/// Value layout (little-endian, 45 bytes): kind (1), owner host (8), owner pid (4), owner start time (8),
/// token (8), deadline in ns since 1970 (8), deadline in ns since the owner's host booted (8; 0: none). Versions
/// before the boot deadline wrote 37 bytes, and read the first 37 of an entry.
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

    /// The size of an entry without its boot deadline (as earlier versions wrote it).
    static let size = 37

    var kind: Kind
    var owner: ProcessIdentity
    var token: UInt64
    /// The deadline in wall time: what other hosts, and versions that kept no boot deadline, go by.
    var deadline: Int64
    /// The deadline on the owner's host's boot clock (0: none), which the owner's host goes by: a step of the wall
    /// clock (NTP, by hand) neither ends a live holder's lease early, so that two loads ran at once, nor keeps a
    /// dead one's for longer (review-105 F6).
    var bootDeadline: Int64 = 0

    /// Whether this is a lease that still holds at `now`: its deadline has not passed and its holder is
    /// not known to be gone.
    func holds(at now: LeaseMoment) -> Bool {
        kind == .lease && isBeforeDeadline(now) && !owner.isGone
    }

    /// Whether this is a remembered nil still in force at `now`.
    func remembersAbsence(at now: LeaseMoment) -> Bool {
        kind == .absent && isBeforeDeadline(now)
    }

    /// Whether the deadline is still ahead at `now`: by the boot clock on the owner's host, else by wall time.
    func isBeforeDeadline(_ now: LeaseMoment) -> Bool {
        keepsBootTime ? bootDeadline > now.boot : deadline > now.wall
    }

    /// Whether the deadline had passed by `cutoff` (a moment some time ago), by the same clock as
    /// ``isBeforeDeadline(_:)``.
    func ended(before cutoff: LeaseMoment) -> Bool {
        keepsBootTime ? bootDeadline < cutoff.boot : deadline < cutoff.wall
    }

    /// How long until the deadline, from `now` (negative once it has passed), by the same clock as
    /// ``isBeforeDeadline(_:)``.
    func timeLeft(at now: LeaseMoment) -> Duration {
        .nanoseconds(
            keepsBootTime ? bootDeadline.subtracting(saturating: now.boot) : deadline.subtracting(saturating: now.wall))
    }

    /// Whether the boot deadline is the one to go by: there is one (only a host whose identity includes its boot id
    /// writes one), and this process runs on the owner's host, in the same boot.
    private var keepsBootTime: Bool {
        bootDeadline != 0 && owner.host == ProcessIdentity.currentHost
    }

    /// The marker of `kind` this entry becomes when a write ends it at `now`, under the same token; its deadline is
    /// half the sweep's grace earlier, so that it stays ended however far a commit's time runs ahead of the clock
    /// (each commit is at least a nanosecond after the last, and the clock may step back), and it is swept about
    /// half a minute after it was written (review-86 #5). Its owner is the process that writes it (a marker's owner
    /// says only whose boot clock its deadline is on): on its host the boot deadline decides, so that a step of the
    /// wall clock back does not make a delete's nil a remembered one, nor one forward sweep it before its waiters
    /// read it (review-111 #2).
    func ended(as kind: Kind, now: LeaseMoment) -> LeaseEntry {
        LeaseEntry(kind: kind, token: token, now: now, left: .nanoseconds(-(LeaseBook.sweepGrace / 2)))
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
        bytes.appendLittleEndian(UInt64(bitPattern: bootDeadline))
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
        if stored.count >= LeaseEntry.size + 8 {
            bootDeadline = Int64(
                bitPattern: UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 37, as: UInt64.self)))
        }
    }

    init(kind: Kind, owner: ProcessIdentity, token: UInt64, deadline: Int64, bootDeadline: Int64 = 0) {
        self.kind = kind
        self.owner = owner
        self.token = token
        self.deadline = deadline
        self.bootDeadline = bootDeadline
    }

    /// An entry of this process whose deadline is `left` after `now` (before it, when negative), on both clocks (the
    /// boot clock's only where the host's identity tells its boots apart).
    init(kind: Kind, token: UInt64, now: LeaseMoment, left: Duration) {
        self.init(
            kind: kind, owner: .current, token: token, deadline: now.wall.advanced(saturatingBy: left),
            bootDeadline: ProcessIdentity.hostIncludesBoot ? max(1, now.boot.advanced(saturatingBy: left)) : 0)
    }
}

/// A moment as leases tell it: wall time, the unit of the deadlines every host reads, and the host's boot time, which
/// the processes of one host share and no step of the wall clock moves (review-105 F6).
struct LeaseMoment: Sendable {
    var wall: Int64
    var boot: Int64

    /// The moment `duration` before this one, on both clocks (saturating).
    func earlier(by duration: Int64) -> LeaseMoment {
        LeaseMoment(wall: wall.subtracting(saturating: duration), boot: boot.subtracting(saturating: duration))
    }
}

extension StorageClock {
    /// Now, as leases tell it.
    func leaseMoment() -> LeaseMoment { LeaseMoment(wall: wallNanoseconds(), boot: bootNanoseconds()) }
}
