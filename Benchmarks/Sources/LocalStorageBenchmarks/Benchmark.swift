import Foundation
import LocalStorageTestSupport

/// Builds the stores, runs the workloads, prints the report.
enum Benchmark {
    static func run(_ options: BenchmarkOptions) async throws {
        let directory =
            options.directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                "LocalStorageBenchmarks-\(ProcessInfo.processInfo.processIdentifier)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        Report.printHeader(options: options, directory: directory)
        let products = Product.generate(count: options.recordCount, seed: options.seed)
        let stores = try await Stores.load(products, options: options, directory: directory)
        var results: [WorkloadResult] = []
        for workload in Workloads.all(stores: stores, products: products, options: options)
        where options.includes(workload: workload.name) {
            let result = try await measure(workload)
            Report.printResult(result)
            results.append(result)
        }
        Report.printSummary(results, options: options)
        if options.includes(workload: "bounded") && options.includes(.localStorageKit) {
            try await Workloads.printHitRates(options, directory: directory.appendingPathComponent("hit-rates"))
        }
        if !options.scalingTableSizes.isEmpty {
            try await runScaling(options, directory: directory.appendingPathComponent("scaling"))
        }
    }

    /// The scaling table: fetch, range (limit 20), count and page at each store size, so the growth of
    /// each cost with N can be read off. Quick repetitions; one store of each system per size.
    static func runScaling(_ options: BenchmarkOptions, directory: URL) async throws {
        Report.emit("\n## Scaling\n")
        var table: [(size: Int, medians: [String: [String: Double]])] = []
        for size in options.scalingTableSizes {
            var sized = options
            sized.recordCount = size
            sized.isQuick = true
            sized.loadsStoreWithoutCountTree = false
            let products = Product.generate(count: size, seed: options.seed)
            let stores = try await Stores.load(
                products, options: sized,
                directory: directory.appendingPathComponent("\(size)"))
            var generator = SplitMix64(seed: options.seed &+ 3)
            let query = Workloads.QuerySizes(isQuick: true)
            let workloads = [
                Workloads.fetch(stores, records: size, isQuick: true, generator: &generator),
                Workloads.range(stores, query, generator: &generator),
                Workloads.count(stores, query, width: Workloads.rangeWidth, name: "count", generator: &generator),
                Workloads.page(
                    stores, query, page: Workloads.pageNumber, width: Workloads.rangeWidth, name: "page",
                    generator: &generator),
                Workloads.unorderedRange(stores, query, records: size, generator: &generator),
                Workloads.unorderedRangeLimit(stores, query, generator: &generator),
                Workloads.equalsPrice(stores, query, generator: &generator),
            ]
            var medians: [String: [String: Double]] = [:]
            for workload in workloads { medians[workload.name] = try await measure(workload).medians }
            table.append((size, medians))
            stores.close()
            try? FileManager.default.removeItem(at: directory.appendingPathComponent("\(size)"))
        }
        Report.printScaling(table)
    }

    /// Runs every contender's batches in turn (round-robin, so that drift hits all alike) and takes medians.
    static func measure(_ workload: Workload) async throws -> WorkloadResult {
        var wallSamples = workload.earlierSamples.mapValues { [$0.wall] }
        var cpuSamples = workload.earlierSamples.mapValues { [$0.cpu] }
        var disagreeing: Set<String> = []
        for batch in 0..<(workload.warmups + workload.batches) {
            var reference: Int?
            for contender in workload.contenders {
                try await contender.prepare?(batch)
                var checksum = 0
                let sample = try await Sample.measure(operations: contender.operations) {
                    checksum = try await contender.run(batch)
                }
                if batch >= workload.warmups {
                    wallSamples[contender.name, default: []].append(sample.wall)
                    cpuSamples[contender.name, default: []].append(sample.cpu)
                }
                guard contender.isComparable else { continue }
                if let reference, reference != checksum { disagreeing.insert(contender.name) }
                reference = reference ?? checksum
            }
        }
        return WorkloadResult(
            workload: workload, wallMedians: wallSamples.mapValues(Stats.median),
            cpuMedians: cpuSamples.mapValues(Stats.median),
            disagreeing: workload.contenders.map(\.name).filter(disagreeing.contains),
            sampleCount: workload.contenders.first.flatMap { wallSamples[$0.name]?.count } ?? 0,
            peakResidentBytes: Stats.peakResidentBytes())
    }
}
