import Foundation
import LocalStorageKit

/// What the command line asked for.
struct BenchmarkOptions: Sendable {
    /// Fewer repetitions: the whole run takes under a minute.
    var isQuick = false
    /// How many products the stores hold.
    var recordCount = 100_000
    /// Workload or system names to run; empty for all.
    var only: Set<String> = []
    /// The payload codec LocalStorageKit writes: the library's default unless told otherwise.
    var codec: StorageCodec = LocalStorageConfiguration().codec
    /// The seed of the records and of every random query parameter.
    var seed: UInt64 = 0x5EED_0004
    /// Where the stores go; a fresh temporary directory when nil.
    var directory: URL?
    /// Store sizes of the scaling table (fetch, range, count and page at each size); empty for none.
    /// A full run makes it at 10,000 and 100,000 records; `--scaling` sets the sizes (1,000,000 is opt-in).
    var scalingSizes: [Int]?
    /// Whether the read stores include one made without a count tree (for the write-cost rows).
    var loadsStoreWithoutCountTree = true
    /// `--help`: print the usage and stop.
    var isHelpRequested = false

    static let usage = """
        Usage: LocalStorageBenchmarks [--quick] [--records N] [--only NAME[,NAME...]] [--codec json|binary]
                                      [--seed N] [--directory PATH] [--scaling N[,N...]|none]

          --quick          fewer repetitions (the whole run takes under a minute)
          --records N      products per store (default 100000)
          --only NAMES     workloads (\(Workloads.names.joined(separator: ", ")))
                           and/or systems (lsk, lmdb, sqlite) to run
          --codec NAME     LocalStorageKit's payload codec (default: the library's, binary)
          --seed N         seed of the records and query parameters
          --directory P    where to create the stores (default: a fresh temporary directory)
          --scaling SIZES  store sizes of the scaling table (default: 10000,100000 in a full run,
                           none in a quick run); for example 10000,100000,1000000
        """

    /// Parses the arguments after the program name.
    init(arguments: [String]) throws {
        var remaining = arguments[...]
        func value(for flag: String) throws -> String {
            guard let value = remaining.popFirst() else { throw BenchmarkError("\(flag) needs a value") }
            return value
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "--quick":
                isQuick = true
            case "--records":
                guard let count = Int(try value(for: argument)), count >= 1_000 else {
                    throw BenchmarkError("--records needs a number of at least 1000")
                }
                recordCount = count
            case "--only":
                let names = try value(for: argument).split(separator: ",").map(String.init)
                let known = Set(Workloads.names + SystemKind.allCases.map(\.rawValue))
                if let unknown = names.first(where: { !known.contains($0) }) {
                    throw BenchmarkError("unknown workload or system: \(unknown)")
                }
                only.formUnion(names)
            case "--codec":
                switch try value(for: argument) {
                case "json": codec = .json
                case "binary": codec = .binary
                case let other: throw BenchmarkError("unknown codec: \(other)")
                }
            case "--seed":
                guard let seed = UInt64(try value(for: argument)) else {
                    throw BenchmarkError("--seed needs a number")
                }
                self.seed = seed
            case "--directory":
                directory = URL(fileURLWithPath: try value(for: argument), isDirectory: true)
            case "--scaling":
                let text = try value(for: argument)
                if text == "none" {
                    scalingSizes = []
                } else {
                    let sizes = text.split(separator: ",").compactMap { Int($0) }
                    guard !sizes.isEmpty, sizes.allSatisfy({ $0 >= 1_000 }) else {
                        throw BenchmarkError("--scaling needs sizes of at least 1000, separated by commas, or none")
                    }
                    scalingSizes = sizes
                }
            case "--help", "-h":
                isHelpRequested = true
            default:
                throw BenchmarkError("unknown argument: \(argument)")
            }
        }
    }

    /// The sizes of the scaling table this run makes.
    var scalingTableSizes: [Int] { scalingSizes ?? (isQuick ? [] : [10_000, 100_000]) }

    /// Whether the run includes `workload`.
    func includes(workload: String) -> Bool {
        let workloads = only.intersection(Workloads.names)
        return workloads.isEmpty || workloads.contains(workload)
    }

    /// Whether the run includes `system`.
    func includes(_ system: SystemKind) -> Bool {
        let systems = only.intersection(SystemKind.allCases.map(\.rawValue))
        return systems.isEmpty || systems.contains(system.rawValue)
    }
}
