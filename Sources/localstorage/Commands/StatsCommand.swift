@_spi(Maintenance) import LocalStorageKit

/// `stats`: map size and use, pages, readers, and per type records, bytes, expired records and indexes.
enum StatsCommand: Command {
    static let name = "stats"
    static let synopsis = "stats"
    static let summary = "Map size and use, pages, readers; records, bytes, expired and index entries per type."
    static let details = ""
    static let spec = ArgumentSpec()

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let stats = try store.statistics()
        if output.isJSON {
            try output.json(stats)
            return 0
        }
        let pages = stats.pages
        output.line("Store     \(stats.path)")
        output.line("Map       \(Output.bytes(stats.usedBytes)) used of \(Output.bytes(stats.mapSize))"
            + " (page size \(stats.pageSize) B)")
        output.line("Pages     \(pages.used) used, \(pages.free) free, \(pages.capacity) capacity;"
            + " \(pages.branch) branch, \(pages.leaf) leaf, \(pages.overflow) overflow")
        output.line("Readers   \(stats.readersInUse) in use of \(stats.maxReaders)")
        output.line("Last txn  \(stats.lastTransactionID)")
        for type in stats.types {
            output.line()
            output.line("\(type.name): \(type.records) records, \(Output.bytes(type.bytes))"
                + " (payloads \(Output.bytes(type.payloadBytes))), \(type.expired) expired, \(type.pages) pages")
            output.line("  update-time entries \(type.updateEntries), expiry entries \(type.expiryEntries)")
            for index in type.indexes {
                output.line("  index \(index.name) (\(index.kind)): \(index.entries) entries")
            }
        }
        return 0
    }
}
