import Foundation

// The follower process of the shared-tier workload (see SharedTierWorkload.swift).
if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "--shared-follower" {
    do {
        try await FollowerProcess.run(port: CommandLine.arguments[2], namespace: CommandLine.arguments[3])
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("follower failed: \(error)\n".utf8))
        exit(1)
    }
}

// The hit-ratio harness (see HitRatioHarness.swift, `make bench-hitratio`).
if CommandLine.arguments.count >= 2, CommandLine.arguments[1] == "--hitratio" {
    do {
        try await HitRatioHarness.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("hit-ratio harness failed: \(error)\n".utf8))
        exit(1)
    }
}

// Bytes on disk, and the cost of encryption and compression (see SpaceReport.swift, issue 26).
if CommandLine.arguments.count >= 2, CommandLine.arguments[1] == "--space" {
    do {
        try await SpaceReport.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("space report failed: \(error)\n".utf8))
        exit(1)
    }
}

let options: BenchmarkOptions
do {
    options = try BenchmarkOptions(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("\(error)\n\n\(BenchmarkOptions.usage)\n".utf8))
    exit(2)
}
if options.isHelpRequested {
    Report.emit(BenchmarkOptions.usage)
    exit(0)
}
do {
    try await Benchmark.run(options)
} catch {
    FileHandle.standardError.write(Data("benchmark failed: \(error)\n".utf8))
    exit(1)
}
