/// One measured task, run by several contenders on the same inputs.
struct Workload {
    /// The name `--only` selects it by.
    let name: String
    /// What one operation is.
    let description: String
    /// How durable the commits are, for write workloads.
    var durability: String?
    /// Timed batches per contender; the median of them is reported.
    let batches: Int
    /// Untimed batches before them.
    var warmups = 1
    var contenders: [Contender]
    /// The lines this workload adds to the summary table.
    var rows: [SummaryRow]
}

/// One system's way of running a workload.
struct Contender {
    let name: String
    /// Operations per batch; the reported figure is a batch's time divided by this.
    let operations: Int
    /// Whether `run` returns the checksum of the same rows as the other comparable contenders.
    var isComparable = true
    /// Untimed work before each batch (batch number).
    var prepare: ((Int) async throws -> Void)?
    /// Runs one batch (batch number) and returns a checksum of what it read.
    let run: (Int) async throws -> Int
}

/// One line of the summary: which contenders fill the three columns, and the targets of the line.
struct SummaryRow {
    let label: String
    let localStorageKit: String
    var raw: String?
    var sqlite: String?
    var targets: [Target] = []
}

/// A goal from the issue: a ratio of two medians and the bound it must meet.
struct Target {
    /// For example "SQLite/LSK ≥ 3×".
    let text: String
    /// The ratio, when both medians exist.
    let ratio: ([String: Double]) -> Double?
    let passes: (Double) -> Bool

    /// `numerator / denominator` at least `bound`.
    static func atLeast(_ bound: Double, _ text: String, _ numerator: String, over denominator: String) -> Target {
        Target(text: text, ratio: { ratio($0, numerator, denominator) }, passes: { $0 >= bound })
    }

    /// `numerator / denominator` at most `bound`.
    static func atMost(_ bound: Double, _ text: String, _ numerator: String, over denominator: String) -> Target {
        Target(text: text, ratio: { ratio($0, numerator, denominator) }, passes: { $0 <= bound })
    }

    private static func ratio(_ medians: [String: Double], _ numerator: String, _ denominator: String) -> Double? {
        guard let top = medians[numerator], let bottom = medians[denominator], bottom > 0 else { return nil }
        return top / bottom
    }
}

/// What running a workload measured.
struct WorkloadResult {
    let workload: Workload
    /// Median ns per operation, by contender name.
    let medians: [String: Double]
    /// Contenders whose checksums differed from the first comparable contender's.
    let disagreeing: [String]
    /// The process's peak resident set size after the workload.
    let peakResidentBytes: Int
}
