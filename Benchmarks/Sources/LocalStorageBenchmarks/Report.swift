import CLMDB
import CSQLite
import Foundation

/// What the benchmark prints: progress while it runs, then a Markdown table to paste into the README.
enum Report {
    static func printHeader(options: BenchmarkOptions, directory: URL) {
        let info = ProcessInfo.processInfo
        emit(
            "LocalStorageKit benchmarks: \(options.recordCount) products, codec \(options.codec), "
                + (options.isQuick ? "quick run" : "full run") + ", seed \(options.seed)")
        emit(
            "\(info.activeProcessorCount) cores, \(info.operatingSystemVersionString); "
                + "LMDB \(String(cString: mdb_version(nil, nil, nil))), SQLite \(String(cString: sqlite3_libversion()))"
        )
        emit("stores in \(directory.path)" + loadAverage())
        emit("")
    }

    static func printLoad(_ system: String, count: Int, seconds: Double) {
        emit("loaded \(count) products into \(system) in " + String(format: "%.2f s", seconds))
    }

    static func printResult(_ result: WorkloadResult) {
        let workload = result.workload
        emit("\n[\(workload.name)] \(workload.description)")
        if let durability = workload.durability { emit("  durability: \(durability)") }
        emit(
            "  median of \(result.sampleCount) batches (after \(workload.warmups) warm-up); "
                + "the summary uses \(workload.clock.rawValue) time")
        for contender in workload.contenders {
            let wall = result.wallMedians[contender.name] ?? 0
            let cpu = result.cpuMedians[contender.name] ?? 0
            emit(
                "  " + pad(contender.name, 36) + padLeft(grouped(wall), 13) + " ns/op wall"
                    + padLeft(grouped(cpu), 13) + " ns/op CPU  (\(contender.operations) ops/batch)")
        }
        if !result.disagreeing.isEmpty {
            emit("  WARNING: results differ from the first system's: \(result.disagreeing.joined(separator: ", "))")
        }
        emit("  peak RSS so far: \(mebibytes(result.peakResidentBytes))")
    }

    static func printSummary(_ results: [WorkloadResult], options: BenchmarkOptions) {
        emit("\n## Summary\n")
        emit(
            "Median ns/op (CPU time for reads, wall time for the durable writes). LSK/raw: how many times "
                + "slower than raw LMDB; SQLite/LSK: how many times faster than SQLite.\n")
        emit("| Workload | LocalStorageKit | raw LMDB | SQLite | LSK/raw | SQLite/LSK | Target | Result |")
        emit("|---|---:|---:|---:|---:|---:|---|---|")
        for result in results {
            for row in result.workload.rows {
                let medians = result.medians
                let lsk = medians[row.localStorageKit]
                let raw = row.raw.flatMap { medians[$0] }
                let sqlite = row.sqlite.flatMap { medians[$0] }
                let lskOverRaw = lsk.flatMap { lsk in raw.map { lsk / $0 } }
                let sqliteOverLSK = lsk.flatMap { lsk in sqlite.map { $0 / lsk } }
                let outcomes = row.targets.map { target -> String in
                    guard let ratio = target.ratio(medians) else { return "n/a" }
                    return (target.passes(ratio) ? "PASS" : "MISS") + " (\(times(ratio)))"
                }
                var cells: [String] = [row.label]
                cells.append(lsk.map(grouped) ?? "n/a")
                cells.append(raw.map(grouped) ?? "–")
                cells.append(sqlite.map(grouped) ?? "–")
                cells.append(lskOverRaw.map(times) ?? "–")
                cells.append(sqliteOverLSK.map(times) ?? "–")
                cells.append(row.targets.map(\.text).joined(separator: "; "))
                cells.append(outcomes.joined(separator: "; "))
                emit("| " + cells.joined(separator: " | ") + " |")
            }
        }
        for result in results where result.workload.rows.isEmpty {
            let figures = result.workload.contenders.map { "\($0.name) \(grouped(result.medians[$0.name] ?? 0)) ns" }
            emit("\n\(result.workload.name): " + figures.joined(separator: ", ") + " per record")
        }
        emit("\npeak RSS of the whole run: \(mebibytes(Stats.peakResidentBytes()))" + loadAverage())
        let arguments = CommandLine.arguments.dropFirst().joined(separator: " ")
        emit("command: swift run -c release LocalStorageBenchmarks \(arguments)")
        if results.contains(where: { !$0.disagreeing.isEmpty }) {
            emit("WARNING: some systems returned different rows; see the workload lines above.")
        }
    }

    /// The scaling table: µs per operation of LocalStorageKit and SQLite at each store size (and of a bare `mdb_get`).
    static func printScaling(_ table: [(size: Int, medians: [String: [String: Double]])]) {
        // The bare `mdb_get` of the fetch row, alone: what of a fetch's growth with the store is LMDB's own (a deeper
        // tree, a map larger than the processor's caches).
        let columns = [
            ("fetch", "fetch(id)"), ("fetch-raw-get", "mdb_get alone"), ("range", "range, limit 20"),
            ("count", "count 10%"), ("page", "page 50 × 20"), ("range-unordered", "between, ~1,000 rows, no order"),
            ("range-unordered-limit", "between, limit 20, no order"), ("equals-price", "equals(price)"),
        ]
        emit("µs per operation (CPU time), LocalStorageKit / SQLite (mdb_get: raw LMDB), at each number of records.\n")
        emit("| records | " + columns.map(\.1).joined(separator: " | ") + " |")
        emit("|---:|" + columns.map { _ in "---:|" }.joined())
        for (size, medians) in table {
            let cells = columns.map { column -> String in
                func micro(_ workload: String, _ name: String) -> String {
                    medians[workload]?[name].map { String(format: "%.1f", $0 / 1000) } ?? "–"
                }
                if column.0 == "fetch-raw-get" { return micro("fetch", Workloads.Name.rawGet) }
                return micro(column.0, Workloads.Name.localStorageKit) + " / " + micro(column.0, Workloads.Name.sqlite)
            }
            emit("| \(grouped(Double(size))) | " + cells.joined(separator: " | ") + " |")
        }
    }

    // MARK: - Formatting

    /// Prints a line and flushes it, so that progress shows when the output goes to a file or a pipe.
    static func emit(_ line: String) {
        print(line)
        fflush(nil)
    }

    /// An integer with thousands separators: 1234567.8 → "1,234,568".
    static func grouped(_ value: Double) -> String {
        let digits = String(Int(value.rounded()))
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 && digit != "-" { out.append(",") }
            out.append(digit)
        }
        return out
    }

    private static func loadAverage() -> String {
        Stats.loadAverage().map { String(format: "; load average %.2f", $0) } ?? ""
    }

    static func times(_ ratio: Double) -> String {
        if ratio >= 100 { return String(format: "%.0f×", ratio) }
        if ratio >= 10 { return String(format: "%.1f×", ratio) }
        return String(format: "%.2f×", ratio)
    }

    static func mebibytes(_ bytes: Int) -> String {
        String(format: "%.0f MiB", Double(bytes) / 1_048_576)
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    private static func padLeft(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
