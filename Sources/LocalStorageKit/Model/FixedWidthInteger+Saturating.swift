extension FixedWidthInteger {
    /// `self + other`, or the type's largest (smallest) value where that overflows: sums of counts read from a
    /// damaged file (LMDB's page and entry counts, the count tree's counters) stay sums, wrong but never a trap.
    func adding(saturating other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }

    /// `self - other`, or the type's largest (smallest) value where that overflows.
    func subtracting(saturating other: Self) -> Self {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other > 0 ? .min : .max
    }
}
