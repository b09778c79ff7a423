import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What ``StoreMaintenance/salvage(directory:)`` did.
@_spi(Maintenance) public struct SalvageReport: Codable, Sendable {
    /// The damage the walk of the old file found.
    public var damage: [VerifyProblem]
    /// Records copied into the fresh store.
    public var salvaged: Int
    /// The records the damaged file held by its own counts (the entries its records databases claim), when
    /// its main database could be read: what ``salvaged`` falls short of is lost.
    public var counted: Int?
    /// Where the damaged data file is kept (`data.mdb.damaged` beside the fresh one), when it could be kept.
    public var keptDamagedFile: String?
    /// Records (and type descriptions) that could be reached but not read; records on damaged pages
    /// cannot be reached at all and are not listed.
    public var lost: [VerifyProblem]
    /// The types the fresh store holds.
    public var types: [String]
    /// A key was given for a store that was not encrypted (no key check value, no sealed record): the fresh
    /// store is not encrypted either, and the key was not used.
    public var keyUnused = false
}

extension StoreMaintenance {
    /// Copies every record that can still be read from a damaged store into a fresh store, then puts the
    /// fresh store in the old one's place (an atomic rename of its data file).
    ///
    /// The old file is read with plain reads along every page reference that is sound (``DataFileWalk``),
    /// never through LMDB, so no damage can crash it; of two meta pages the snapshot that yields more
    /// records is used. Each record is checked as `import` checks it and written with its timestamps,
    /// expiry and version; its index entries and counts are built afresh.
    ///
    /// An encrypted store is salvaged with its key: its records are opened with it and sealed again in the
    /// fresh store; compressed records are read with the dictionaries that can still be read.
    ///
    /// - Parameters:
    ///   - directory: The store directory or the app's `databaseDirectory`.
    ///   - encryption: The store's key (and previous keys), when it is encrypted.
    /// - Throws: ``MaintenanceError/noStore(path:)``; `storageError` with `EBUSY` while any process
    ///   (this one included) has the store open; `openFailed` for an encrypted store salvaged without its
    ///   key or with another key (nothing is changed then).
    public static func salvage(directory: URL, encryption: StorageEncryption? = nil) async throws -> SalvageReport {
        try await salvage(directory: directory, encryption: encryption, step: { _ in })
    }

    /// ``salvage(directory:encryption:)``, telling `step` when the store is locked for the swap (`locked`).
    static func salvage(
        directory: URL, encryption: StorageEncryption?, step: (String) async -> Void
    ) async throws -> SalvageReport {
        let directory = storeDirectory(named: directory)
        let dataFile = directory.appendingPathComponent("data.mdb")
        guard FileManager.default.fileExists(atPath: dataFile.path) else {
            throw MaintenanceError.noStore(path: directory.path)
        }
        try StoreInUse.check(directory, doing: "repair")
        // The salvaged store keeps the files' mode and group (a group's store stays the group's).
        var original = stat()
        let kept = stat(dataFile.path, &original) == 0 ? original : nil
        let (lines, damage, unreadable, counted, encrypted, newer, layout) = try salvageLines(
            of: dataFile, encryption: encryption)
        // A record no key given opens may be whole under another key: a salvage would lose it for good.
        let unopened = unreadable.filter { $0.kind == .sealNotOpened }
        if let first = unopened.first {
            throw MaintenanceError.invalidArgument(
                "\(unopened.count) records (the first: \(first)) are sealed with a key this salvage was not "
                    + "given; nothing was changed. Salvage with every key the store may hold (--key-file NEW "
                    + "--previous-key-file OLD)")
        }
        // So would every record of a type whose description a newer version wrote (well-formed JSON this version
        // cannot read): the fresh store would not hold the type at all.
        if let name = newer.first {
            throw MaintenanceError.invalidArgument(
                "the description of \(String(reflecting: name)) in meta is well-formed but "
                    + "cannot be read, most likely written by a newer version of LocalStorageKit: a salvage would "
                    + "lose all its records; nothing was changed. Repair the store with that version")
        }
        let fresh = directory.appendingPathComponent(".salvage-\(UUID().uuidString)", isDirectory: true)
        var report: SalvageReport
        var swapLock: StoreSwapLock?
        do {
            // A key given for a plain store is not used: sealed, the fresh store would lock out every app without one.
            report = try await importSalvaged(
                lines, into: fresh, encryption: encrypted ? encryption : nil, layout: layout)
            report.keyUnused = encryption != nil && !encrypted
            report.damage = damage
            report.lost = unreadable + report.lost
            report.counted = counted
            try StoreInUse.check(directory, doing: "repair")
            // LMDB's own lock, held from here through the swap: a process that opens the store meanwhile
            // waits for it (it would map the old file and write into `data.mdb.damaged`), then finds the
            // lock file set up afresh for the new file.
            swapLock = try StoreSwapLock(directory: directory, mode: kept.map { mode_t(Int($0.st_mode) & 0o777) })
            await step("locked")
            if let kept {
                // The fresh file gets the store's owner, group and mode before it takes the store's name: made by
                // whoever runs the repair (root, say), it locked the app that owns the store out.
                let path = fresh.appendingPathComponent("data.mdb").path
                if let problem = StoreMaintenance.giveOwner(of: kept, to: path), getuid() == 0 {
                    throw MaintenanceError.invalidArgument(
                        "cannot give the salvaged store the owner of \(dataFile.path): \(problem)")
                }
                StoreFileModes.setMode(path, Int(kept.st_mode) & 0o777)
            }
            report.keptDamagedFile = keepDamaged(dataFile)
            guard rename(fresh.appendingPathComponent("data.mdb").path, dataFile.path) == 0 else {
                throw MaintenanceError.invalidArgument(
                    "cannot move the salvaged store into \(directory.path): \(String(cString: strerror(errno)))")
            }
            swapLock?.swapped(mode: kept.map { Int($0.st_mode) & 0o777 } ?? 0o600)
        } catch {
            swapLock?.release()
            if FileManager.default.fileExists(atPath: fresh.path) { try FileManager.default.removeItem(at: fresh) }
            throw error
        }
        try FileManager.default.removeItem(at: fresh)
        if let kept {
            for name in ["lock.mdb", "compaction.lock"] {
                let path = directory.appendingPathComponent(name).path
                // An owner this user cannot give is left (the lock files are made afresh at an open); the mode is
                // set either way.
                StoreMaintenance.giveOwner(of: kept, to: path)
                StoreFileModes.setMode(path, Int(kept.st_mode) & 0o777)
            }
        }
        return report
    }

    /// Gives the file at `path` the owner and group of `original` (the store's data file). Only root can give
    /// another owner; any other user gives the group alone, where it is one of the user's groups (a group's
    /// shared store). Returns why the owner could not be given, or nil.
    @discardableResult
    static func giveOwner(of original: stat, to path: String) -> String? {
        if chown(path, original.st_uid, original.st_gid) == 0 { return nil }
        let problem = String(cString: strerror(errno))
        _ = chown(path, uid_t.max, original.st_gid)
        return problem
    }

    /// Keeps the damaged data file beside the fresh one as `data.mdb.damaged` (a second name for it, replacing
    /// an older one), so that what the salvage could not read is not gone for good; its path, or nil when the
    /// file system refuses a second name.
    private static func keepDamaged(_ dataFile: URL) -> String? {
        let kept = dataFile.path + ".damaged"
        unlink(kept)
        return link(dataFile.path, kept) == 0 ? kept : nil
    }

    /// The damage in the pages of the store in `directory` (the store directory or the app's
    /// `databaseDirectory`), read with plain reads along every page reference of the newest commit: never
    /// through LMDB, so that it is safe on any file. Empty when the pages are sound.
    public static func pageDamage(directory: URL) throws -> [VerifyProblem] {
        let dataFile = storeDirectory(named: directory).appendingPathComponent("data.mdb")
        let descriptor = open(dataFile.path, O_RDONLY)
        guard descriptor >= 0 else { throw MaintenanceError.noStore(path: directory.path) }
        defer { close(descriptor) }
        var pages = DataFilePages(descriptor: descriptor)
        let (meta, problems) = DataFileWalk.newestMeta(&pages)
        var found = problems
        if let meta {
            var walk = DataFileWalk(pages: pages, meta: meta)
            walk.run()
            found += walk.problems
        }
        return found.map { VerifyProblem(type: "data.mdb", id: nil, kind: .damagedFile, detail: "\($0)") }
    }

    /// Export lines (a type line, then its records) of every readable type and record of `dataFile`, the
    /// damage found on the way, what was reached but could not be read, the records the file counts, and whether
    /// the store was encrypted (a key check value in `meta`, or a sealed record). Sealed and compressed payloads
    /// are opened with `encryption` and the dictionaries found.
    private static func salvageLines(
        of dataFile: URL, encryption: StorageEncryption?
    ) throws -> (
        lines: [Data], damage: [VerifyProblem], lost: [VerifyProblem], counted: Int?, encrypted: Bool, newer: [String],
        layout: Int?
    ) {
        let descriptor = open(dataFile.path, O_RDONLY)
        guard descriptor >= 0 else {
            throw LocalStorageError.openFailed(path: dataFile.path, reason: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        var pages = DataFilePages(descriptor: descriptor)
        let (metas, metaProblems) = DataFileWalk.usableMetas(&pages)
        var snapshots: [SalvagedSnapshot] = []
        for meta in metas {
            let found = SalvagedEntries()
            var walk = DataFileWalk(pages: pages, meta: meta)
            walk.salvaging = true
            walk.collects = { $0 == TypeRegistry.metaName || $0.hasPrefix("r.") }
            walk.visit = { database, key, value in found.add(database, key, value) }
            walk.run()
            found.drop(walk.ambiguous)
            let sealing = try PayloadSealing.forSalvage(
                encryption: encryption, metaEntries: found.metaEntries, path: dataFile.path)
            let (lines, lost, records, newer) = found.exportLines(sealing: sealing)
            snapshots.append(
                SalvagedSnapshot(
                    meta: meta, problems: walk.problems, lines: lines, lost: lost, records: records, newer: newer,
                    counted: Self.counted(walk, records: records, fileLength: pages.fileLength),
                    encrypted: found.metaEntries.contains { $0.key == PayloadSealing.checkKey } || found.holdsSealed,
                    layout: found.metaEntries.first { $0.key == TypeRegistry.layoutKey }.flatMap {
                        Int(String(decoding: $0.value, as: UTF8.self))
                    }))
        }
        guard let best = Self.choice(snapshots)
        else {
            throw LocalStorageError.openFailed(
                path: dataFile.path, reason: "neither meta page can be used; nothing can be salvaged")
        }
        var damage = (metaProblems + best.problems).map {
            VerifyProblem(type: "data.mdb", id: nil, kind: .damagedFile, detail: "\($0)")
        }
        if let newest = snapshots.first, newest.meta.transactionID != best.meta.transactionID {
            let why = newest.problems.first { !best.problems.contains($0) }.map { ": \($0)" } ?? ""
            damage.insert(
                VerifyProblem(
                    type: "data.mdb", id: nil, kind: .damagedFile,
                    detail: "the newest commit (transaction \(newest.meta.transactionID)) cannot be read whole\(why); "
                        + "the salvage read the commit before it (transaction \(best.meta.transactionID)): what the "
                        + "newest commit wrote is lost"),
                at: 0)
        }
        return (best.lines, damage, best.lost, best.counted, best.encrypted, best.newer, best.layout)
    }

    /// Which snapshot a salvage reads: the newest, unless it has damage the older one does not (its own pages
    /// are damaged) and yields fewer records. The older commit brings back what the newest deleted, so it is
    /// read only when the newest is worse off.
    private static func choice(_ snapshots: [SalvagedSnapshot]) -> SalvagedSnapshot? {
        guard let newest = snapshots.first else { return nil }
        guard snapshots.count > 1 else { return newest }
        let older = snapshots[1]
        // Two meta pages naming one transaction (one is damaged): either may be the newer; the one yielding more
        // records wins.
        if older.meta.transactionID == newest.meta.transactionID {
            return older.records > newest.records ? older : newest
        }
        // Counts that differ follow from damage both share, as each commit counts its own records.
        let ownDamage = newest.problems.contains { !$0.isCountClaim && !older.problems.contains($0) }
        return ownDamage && older.records > newest.records ? older : newest
    }

    /// The records a salvage walk's records databases claim (``SalvageReport/counted``); nil when the claims
    /// cannot be trusted: fewer than the records read, or more than the file could hold (a changed count).
    private static func counted(_ walk: DataFileWalk, records: Int, fileLength: Int) -> Int? {
        guard !walk.databases.isEmpty else { return nil }
        var claimed = walk.ambiguousEntries
        for (name, record) in walk.databases where name.hasPrefix("r.") && Environment.isTypeDatabase(name) {
            // A tree read without damage counts its records exactly; a damaged one's own count is the best guess.
            let damaged = walk.problems.contains { $0.database == name && $0.page != nil }
            let entries = damaged ? record.entries : walk.walkedEntries[name] ?? record.entries
            let (sum, overflow) = claimed.addingReportingOverflow(entries)
            guard !overflow else { return nil }
            claimed = sum
        }
        // A record takes at least a node (8 bytes), a key byte and a record header's 20-odd bytes.
        guard claimed >= UInt64(records), claimed <= UInt64(fileLength / 16) else { return nil }
        return Int(claimed)
    }

    /// Imports salvaged export lines into a new store at `directory`, skipping (and listing) each line
    /// that cannot be imported; with `encryption`, the records are sealed with its key. The new store gets the
    /// damaged one's `layout` when it is an older one this version writes: the salvage replaces the store of an
    /// app that may be the version that wrote it, which a newer layout would lock out.
    private static func importSalvaged(
        _ lines: [Data], into directory: URL, encryption: StorageEncryption?, layout: Int?
    ) async throws -> SalvageReport {
        let store = try await StoreMaintenance(directory: directory, creatingIfMissing: true, encryption: encryption)
        // Layout 2 at the least becomes 3: the fresh store has a count tree, which a version of layout 2 would not
        // keep (the tool's own open of a layout-2 store takes it to 3 as well).
        if let layout, (TypeRegistry.oldestLayout..<TypeRegistry.layout).contains(layout) {
            let kept = max(layout, TypeRegistry.countTreeLayout)
            let meta = store.meta
            try await store.write { writer in
                try writer.transact { context in
                    try context.txn.put(meta, key: TypeRegistry.layoutKey, value: Array("\(kept)".utf8))
                }
            }
        }
        var parser = ImportParser(known: [:], check: ImportRecordCheck(checkingPayloadValues: false))
        var items: [ImportParser.Item] = []
        var lost: [VerifyProblem] = []
        for line in lines {
            do {
                if let item = try parser.parse(ArraySlice(line)) { items.append(item) }
            } catch {
                lost.append(VerifyProblem(type: "?", id: nil, kind: .damagedRecord, detail: "\(error)"))
            }
        }
        let meta = store.meta
        let sealing = store.sealing
        var salvaged = 0
        for start in stride(from: 0, to: items.count, by: batchSize) {
            let batch = Array(items[start..<min(items.count, start + batchSize)])
            salvaged += try await store.write { writer in
                try writer.transact { context in
                    try ImportParser.apply(batch, meta: meta, context: context, sealing: sealing)
                }
            }
        }
        return SalvageReport(damage: [], salvaged: salvaged, lost: lost, types: parser.typeNames)
    }
}
