import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `stats`: map size and use, pages, readers, the data file and the free pages a `compact` gives back, the
/// totals, and per type records, bytes, expired records and indexes.
enum StatsCommand: Command {
    static let name = "stats"
    static let synopsis = "stats"
    static let summary =
        "Map size and use, pages, readers, free space; records, bytes, expired and index entries "
        + "per type and in all."
    static let details = """
        An LMDB data file never shrinks by itself: pages freed by deletes are reused by later writes. "Free \
        pages" is how much of the file a `compact` would give back, "Free" the same as a fraction of the file \
        (what compaction at open compares with its threshold); "Databases" lists the pages, B-tree depth and \
        entries of each database (mdb_stat). In a database of sorted duplicates (update times, expiry times, \
        indexes), a key's many duplicates are a tree of their own: its pages count with the database's, while \
        the depth is that of the keys' tree, so branch pages show at depth 1. Evictions, memory-tier hits and limits \
        belong to the app's process (LocalStorage.statistics()), not to the file.
        """
    static let spec = ArgumentSpec()
    static let onlyReads = true

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        let stats = try store.statistics()
        if output.isJSON {
            try output.json(stats)
            return 0
        }
        let pages = stats.pages
        output.line("Store     \(stats.path)")
        // One figure for the map, the one LocalStorage.statistics() reports: pages written minus free pages.
        output.line(
            "Map       \(Output.bytes(stats.mapUsedBytes)) used, \(Output.bytes(stats.mapFreeBytes)) free"
                + " of \(Output.bytes(stats.mapSize)) (page size \(stats.pageSize) B)")
        output.line(
            "Pages     \(pages.used) written, \(pages.free) of them free, \(pages.capacity) capacity;"
                + " \(pages.branch) branch, \(pages.leaf) leaf, \(pages.overflow) overflow")
        output.line(
            "File      \(Output.bytes(stats.fileBytes)) on disk; \(Output.bytes(stats.reclaimableBytes)) in"
                + " free pages (\(pages.free) pages), the least a compact gives back (it also packs part-filled pages)")
        output.line(
            "Free      \(percent(stats.freeFraction)) of the file is free pages (free fraction"
                + " \(String(format: "%.3f", stats.freeFraction)), what compaction at open compares with its threshold)"
        )
        output.line("Readers   \(stats.readersInUse) in use of \(stats.maxReaders)")
        output.line("Last txn  \(stats.lastTransactionID)")
        if let layout = stats.layout {
            output.line(
                "Layout    \(layout) (a version of LocalStorageKit opens a store of its own layout or an older one)")
        }
        output.line(
            "Total     \(stats.records) records, payloads \(Output.bytes(stats.payloadBytes)),"
                + " \(stats.expired) expired, \(stats.types.count) types")
        output.line()
        output.line("Databases (pages, depth, entries; largest first):")
        let names = stats.databases.map { TypeArgument.displayed($0.name) }
        let width = names.map(\.count).max() ?? 0
        for (database, name) in zip(stats.databases, names) {
            output.line(
                // Padded by characters: `padding(toLength:)` counts UTF-16 units and cut names with emoji short.
                "  \(name + String(repeating: " ", count: max(0, width - name.count)))  \(database.pages) pages"
                    + " (\(database.branchPages) branch, \(database.leafPages) leaf, \(database.overflowPages) overflow),"
                    + " depth \(database.depth), \(database.entries) entries")
        }
        for type in stats.types {
            output.line()
            output.line(
                "\(TypeArgument.displayed(type.name)): \(type.records) records, \(Output.bytes(type.bytes))"
                    + " (payloads \(Output.bytes(type.payloadBytes))), \(type.expired) expired, \(type.pages) pages")
            if type.damaged > 0 {
                output.line(
                    "  \(type.damaged) damaged record(s): `localstorage verify` names them, `verify --repair` removes them"
                )
            }
            if type.newer > 0 {
                output.line(
                    "  \(type.newer) record(s) written by a newer version of LocalStorageKit, left as they are")
            }
            if type.notReindexed > 0 {
                output.line(
                    "  \(type.notReindexed) record(s) indexed under another declaration of the type's indexes (another app "
                        + "version or extension, or an import): the app re-indexes them at its first indexed query of "
                        + "the type; until then indexes that declaration lacks leave them out")
            }
            let order = type.keepsUpdateOrder ? "" : " (none kept until a query sorts by update time)"
            output.line(
                "  update-time entries \(type.updateEntries)\(order), expiry entries \(type.expiryEntries)")
            for index in type.indexes {
                output.line(
                    "  index \(TypeArgument.displayed(index.name)) (\(index.kind)): \(index.entries) entries"
                        + (index.isDeclared
                            ? "" : " (declared by another declaration of the type, not the last registered)"))
            }
        }
        return 0
    }

    /// `fraction` as a whole percentage.
    private static func percent(_ fraction: Double) -> String { "\(Int((fraction * 100).rounded()))%" }
}
