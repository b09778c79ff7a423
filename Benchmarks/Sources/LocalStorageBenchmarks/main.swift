import Foundation

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
