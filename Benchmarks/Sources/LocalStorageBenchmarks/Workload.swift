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
    /// The clock the summary uses: process CPU time for reads (robust on a busy machine), the wall clock for
    /// writes (which wait for the disk).
    var clock: BenchmarkClock = .cpu
    var contenders: [Contender]
    /// Samples taken before the workload ran, by contender name: the bulk save counts the loading of the
    /// read stores, which is the same operation.
    var earlierSamples: [String: Sample] = [:]
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

    /// The median of `name` over a fixed budget of `nanoseconds`, at most 1.
    static func withinBudget(_ nanoseconds: Double, _ text: String, _ name: String) -> Target {
        Target(text: text, ratio: { medians in medians[name].map { $0 / nanoseconds } }, passes: { $0 <= 1 })
    }

    private static func ratio(_ medians: [String: Double], _ numerator: String, _ denominator: String) -> Double? {
        guard let top = medians[numerator], let bottom = medians[denominator], bottom > 0 else { return nil }
        return top / bottom
    }
}

/// One timed batch, per operation.
struct Sample {
    let wall: Double
    let cpu: Double

    /// Times `body`, dividing by `operations`.
    static func measure(operations: Int, _ body: () async throws -> Void) async rethrows -> Sample {
        let start = Stats.now()
        let startCPU = Stats.processCPUTime()
        try await body()
        let cpu = Stats.processCPUTime() - startCPU
        let wall = Stats.now() - start
        return Sample(wall: Double(wall) / Double(operations), cpu: Double(cpu) / Double(operations))
    }
}

/// Which time a figure is measured in.
enum BenchmarkClock: String {
    /// `CLOCK_PROCESS_CPUTIME_ID`: the CPU time of all of this process's threads.
    case cpu = "CPU"
    /// `CLOCK_MONOTONIC`: elapsed time, waits for the disk included.
    case wall
}

/// What running a workload measured.
struct WorkloadResult {
    let workload: Workload
    /// Median wall-clock ns per operation, by contender name.
    let wallMedians: [String: Double]
    /// Median CPU ns per operation, by contender name.
    let cpuMedians: [String: Double]
    /// The medians of the workload's summary clock.
    var medians: [String: Double] { workload.clock == .cpu ? cpuMedians : wallMedians }
    /// Contenders whose checksums differed from the first comparable contender's.
    let disagreeing: [String]
    /// Timed batches per contender (the first contender's count).
    let sampleCount: Int
    /// The process's peak resident set size after the workload.
    let peakResidentBytes: Int
}
