/// The load leases on the server (docs/DESIGN.md, "Loading through the cache across instances"): one load
/// per id among every instance on the namespace. A lease is `SET {ns}:lease:{type}:{id} value NX PX timeout`;
/// its holder writes the loaded record under it (``SharedTierScripts/leasedPut``) or settles it (compare and
/// delete); any put of the id ends it and any delete voids it (an ended remembered nil of its token, for the
/// callers waiting on it), so a load that a write overtook writes nothing.
extension SharedTier {
    /// What taking a lease found.
    enum LeaseAttempt: Sendable, Equatable {
        /// The lease is this caller's.
        case acquired
        /// The server holds a record that makes the load needless (not the one being refreshed).
        case recordExists
        /// Another lease, or a remembered nil, is in the way (nil: a value this version cannot read);
        /// `remaining` is its time to live on the server (zero: it is gone already; nil: it has none).
        case held(SharedTierLease?, remaining: Duration?)
    }

    /// What the record being loaded must be for the lease to be taken.
    enum LeaseCondition: Sendable {
        /// No record on the server (a load of a missing record).
        case noRecord
        /// The record a refresh served: the one last updated at this time, with this expiry (review-91 R1: with
        /// no record, or another expiry, a write by another instance came first).
        case refreshing(updatedAt: Int64, expiresAt: Int64)
        /// Whatever the server holds (the server's record is not live for this instance's clock).
        case any
    }

    func leaseKey(type: String, id: [UInt8]) -> [UInt8] {
        layout.lease(type: SharedTierLayout.escape(type), id: id)
    }

    /// Tries to take the lease of `id` under `token` for `timeout` (the server's `PX`).
    func acquireLease(
        type: String, id: [UInt8], token: UInt64, timeout: Duration, condition: LeaseCondition
    ) async throws(LocalStorageError) -> LeaseAttempt {
        let type = SharedTierLayout.escape(type)
        var expected: [UInt8] = []
        switch condition {
        case .noRecord: break
        case .refreshing(let updatedAt, let expiresAt):
            expected.appendLittleEndian(updatedAt)
            expected.appendLittleEndian(expiresAt)
        case .any: expected = Array("-".utf8)
        }
        beforeLeaseRequest.withLock { $0 }?()
        let reply = try expectSuccess(
            try await run(
                "acquireLease", SharedTierScripts.acquireLease,
                [
                    layout.lease(type: type, id: id), layout.record(type: type, id: id),
                    SharedTierLease(kind: .lease, token: token).bytes,
                    Array(String(SharedTier.milliseconds(timeout)).utf8), expected,
                    layout.abandonedLease(type: type, id: id, token: token),
                ], unlessCancelled: true), script: "acquireLease")
        guard let values = reply.elements, let outcome = values.first?.int else {
            throw .sharedTierUnavailable("the acquireLease script at \(endpoint.label) replied \(reply.summary)")
        }
        switch outcome {
        case 1: return .acquired
        case 2: return .recordExists
        default:
            let holder = values.count > 1 ? values[1].bytes.flatMap(SharedTierLease.init) : nil
            let left = values.count > 2 ? values[2].int : nil
            let remaining: Duration? =
                switch left {
                case -1: nil
                case let left? where left >= 0: .milliseconds(left)
                default: .zero
                }
            return .held(holder, remaining: remaining)
        }
    }

    /// Ends the lease (or remembered nil) `expected` on `id` if the server still holds it, replacing it with
    /// `replacement` for `keepFor` when given; with `announce`, publishes a change notice of kind `L` that wakes
    /// the callers of other instances waiting on it. Returns whether the server still held `expected`.
    @discardableResult
    func settleLease(
        type: String, id: String, expected: SharedTierLease, replacement: SharedTierLease? = nil,
        keepFor: Duration = .zero, announce: Bool
    ) async throws(LocalStorageError) -> Bool {
        try failIfATestSaysSo()
        let reply = try expectSuccess(
            try await run(
                "settleLease", SharedTierScripts.settleLease,
                [
                    leaseKey(type: type, id: Array(id.utf8)), expected.bytes, replacement?.bytes ?? [],
                    Array(String(max(1, SharedTier.milliseconds(keepFor))).utf8),
                    announce ? notice(UInt8(ascii: "L"), type: type, id: id) : [],
                ]), script: "settleLease")
        guard let held = reply.int else {
            throw .sharedTierUnavailable("the settleLease script at \(endpoint.label) replied \(reply.summary)")
        }
        return held == 1
    }

    /// Gives back the lease of `id` that the request under `token` may have taken although its caller stopped
    /// waiting for it, waking the callers of other instances; when the server does not hold it (the request
    /// took none, or has not arrived yet: it went on a connection since dropped), marks the request abandoned
    /// for `keepFor`, so that it takes no lease if it arrives later. Returns whether the server held the lease.
    @discardableResult
    func abandonLease(
        type: String, id: String, token: UInt64, keepFor: Duration
    ) async throws(LocalStorageError) -> Bool {
        try failIfATestSaysSo()
        let key = Array(id.utf8)
        let reply = try expectSuccess(
            try await run(
                "abandonLease", SharedTierScripts.abandonLease,
                [
                    leaseKey(type: type, id: key), SharedTierLease(kind: .lease, token: token).bytes,
                    layout.abandonedLease(type: SharedTierLayout.escape(type), id: key, token: token),
                    Array(String(max(1, SharedTier.milliseconds(keepFor))).utf8),
                    notice(UInt8(ascii: "L"), type: type, id: id),
                ]), script: "abandonLease")
        guard let held = reply.int else {
            throw .sharedTierUnavailable("the abandonLease script at \(endpoint.label) replied \(reply.summary)")
        }
        return held == 1
    }

    /// Tests only: fails as a server that cannot be reached would, while ``failingGiveBacks`` says to.
    private func failIfATestSaysSo() throws(LocalStorageError) {
        let failing = failingGiveBacks.withLock { count in
            defer { count = max(0, count - 1) }
            return count > 0
        }
        if failing { throw .sharedTierUnavailable("\(endpoint.label) cannot be reached (a test's failure)") }
    }

    /// A duration in whole milliseconds, rounded up (a lease never ends before its time).
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, rest) = attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000_000_000)
        return max(0, seconds &* 1000 &+ whole &+ (rest > 0 ? 1 : 0))
    }
}
