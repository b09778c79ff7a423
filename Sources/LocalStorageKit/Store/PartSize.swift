/// How many records the next commit of a long deletion takes on (`delete(_:matching:)` in parts, `purgeExpired()`,
/// the expiry sweep): deletes spread over a store rewrite about every page they touch, and LMDB reuses no page a
/// commit frees within that commit, so at a full map a part that does not fit is halved until one does, and after
/// one that fitted the next is doubled again, up to ``largest``.
struct PartSize {
    /// The size parts start at and grow back to.
    let largest: Int
    /// The size of the next part.
    private(set) var current: Int

    /// Parts of `largest` records, to start with.
    init(largest: Int) {
        self.largest = max(largest, 1)
        current = self.largest
    }

    /// After a part that did not fit: halves the next one and returns true, or returns false when it was one record
    /// (nothing smaller can fit, and the caller throws).
    mutating func shrink() -> Bool {
        guard current > 1 else { return false }
        current /= 2
        return true
    }

    /// After a part that fitted: the next one doubles, up to ``largest``.
    mutating func grow() {
        current = min(current * 2, largest)
    }
}
