/// A walk of every database of an LMDB data file and every page reference in it, through
/// ``DataFilePages`` (plain reads, so that damage is found, never crashed on).
///
/// Checked: every page a tree references lies inside the file, names itself, has the kind its depth
/// needs (branch above, leaf at the bottom, overflow for large values) and sane bounds; no page is
/// referenced twice; node offsets and sizes lie inside their page; keys ascend within a page; each
/// database's entry and page counts agree with its tree; the free-page lists name pages inside the file
/// that no tree uses. Entries of the databases ``collects`` chooses are handed to ``visit``.
struct DataFileWalk {
    private(set) var pages: DataFilePages
    let meta: MetaPage
    /// Whether the leaf entries of a named database go to ``visit``.
    var collects: (String) -> Bool = { _ in false }
    /// The named databases walked to their last page (all, unless set); of the others only the root page is
    /// checked, as ``checksRootOf`` says. The main and free-page databases are always walked. Opening a store
    /// walks `meta` alone; a maintenance command the databases it reads or writes.
    var walks: (String) -> Bool = { _ in true }
    /// Which named databases that are not walked get their root page checked (all, unless set): opening a
    /// store leaves its types' databases to the first use of each type
    /// (``Environment/checkTypeRoots(number:names:in:)``).
    var checksRootOf: (String) -> Bool = { _ in true }
    /// The sub-trees of sorted duplicates are counted from their records instead of walked: what
    /// ``pageTotals`` needs, at the cost of the walked databases' own pages.
    var countsSubTreesFromRecords = false
    /// A salvage's walk: a page whose keys are out of order is reported and still read, and a node that runs
    /// past its page is reported and skipped, as a salvage can use every entry it can reach (a byte changed
    /// in a key of the main database used to hide every database after it). Page references are checked as
    /// in any walk.
    var salvaging = false
    /// Receives (database, key, value) of the databases ``collects`` chooses.
    var visit: (String, [UInt8], [UInt8]) -> Void = { _, _, _ in }
    private(set) var problems: [Problem] = []
    /// The named databases the main database describes.
    private(set) var databases: [String: DatabaseRecord] = [:]
    /// Names the main database holds twice (only a ``salvaging`` walk reads on where that can happen): the
    /// entries collected under them may belong to either database.
    private(set) var ambiguous: Set<String> = []
    /// The entries each walked database's tree holds, by name (its sub-trees' included).
    private(set) var walkedEntries: [String: UInt64] = [:]
    /// The entries the records of names held twice claim (a salvage counts them as lost).
    private(set) var ambiguousEntries: UInt64 = 0
    private var used: [Bool]
    /// The pages the free-page database lists, as the walk met them.
    private(set) var freeListed: [UInt64] = []
    /// The pages of each database the walk went through, by name, its sorted duplicates' sub-trees included
    /// (LMDB's own counts leave those out): the main and free-page databases and those it ``walks``.
    private(set) var pageTotals: [String: PageTotals] = [:]

    /// A walk of the snapshot `meta` describes.
    init(pages: DataFilePages, meta: MetaPage) {
        var pages = pages
        pages.pageSize = meta.pageSize
        self.pages = pages
        self.meta = meta
        let fileLimit = UInt64(pages.fileLength / max(1, meta.pageSize))
        used = [Bool](repeating: false, count: Int(min(meta.lastPage &+ 1, fileLimit)))
    }

    /// Walks the free-page database, the main database and every database it names.
    mutating func run() {
        for page in 0..<min(2, used.count) { used[page] = true }
        walk("main", meta.main, isMain: true)
        walk("free pages", meta.freePages, integerKeys: true, freeList: true)
        // Marks in an array, not a set: the free list of a large store holds tens of thousands of pages, and
        // this runs at every open. Only pages past the file's end, a commit's few loose pages, go in a set.
        var listed = [Bool](repeating: false, count: used.count)
        var listedPastEnd = Set<UInt64>()
        for page in freeListed {
            if page < UInt64(used.count) {
                let index = Int(page)
                if used[index] {
                    report("free pages", nil, "page \(page) is listed as free but a database uses it")
                } else if listed[index] {
                    report("free pages", nil, "page \(page) is listed as free twice")
                }
                listed[index] = true
            } else if !listedPastEnd.insert(page).inserted {
                report("free pages", nil, "page \(page) is listed as free twice")
            }
        }
        // Pages past the file's end were never written: each must be free (loose pages of a commit).
        let written = UInt64(used.count)
        if meta.lastPage >= written {
            // The pages past the end number `missing + 1` (written as this so that it cannot overflow).
            let missing = meta.lastPage - written
            if missing >= UInt64(listedPastEnd.count) || !(written...meta.lastPage).allSatisfy(listedPastEnd.contains) {
                // Put first: the references past the end that the walk met follow from it.
                problems.insert(
                    Problem(
                        database: "meta", page: UInt64(meta.number),
                        detail: "the data file is truncated: its meta page says it holds \(meta.lastPage &+ 1) "
                            + "pages, the file has \(pages.fileLength) bytes, and not every page past its end is free"),
                    at: 0)
            }
        }
    }

    mutating func report(_ database: String, _ page: UInt64?, _ detail: String) {
        if problems.count < 1000 { problems.append(Problem(database: database, page: page, detail: detail)) }
    }

    /// Counts met while walking one tree.
    private struct Tally {
        var entries: UInt64 = 0
        var branch: UInt64 = 0
        var leaf: UInt64 = 0
        var overflow: UInt64 = 0
    }

    /// Walks one tree and compares its counts with its record.
    private mutating func walk(
        _ name: String, _ record: DatabaseRecord, isMain: Bool = false, integerKeys: Bool = false,
        freeList: Bool = false, isSubTree: Bool = false
    ) {
        if record.root == DataFilePages.invalidPage {
            if record.entries != 0 || record.depth != 0 {
                report(name, nil, "it has no root page but claims \(record.entries) entries")
            }
            return
        }
        guard record.depth >= 1, record.depth <= 32 else {
            report(name, record.root, "its depth \(record.depth) is impossible")
            return
        }
        var tally = Tally()
        let ordered = !integerKeys && record.flags & 0x0A == 0  // No MDB_REVERSEKEY or MDB_INTEGERKEY.
        let options = TreeOptions(
            name: name, depth: Int(record.depth), isMain: isMain, ordered: ordered,
            // A sub-tree of duplicates never has duplicates of its own (LMDB nests one level): one that says
            // so is damaged, and the walk does not recurse into it (a crafted file could nest without end).
            dupSort: !isSubTree && record.flags & 0x04 != 0, dupFixed: record.flags & 0x10 != 0, freeList: freeList)
        visitPage(record.root, level: 1, options: options, range: KeyRange(), tally: &tally)
        // A sub-tree of sorted duplicates is walked under its database's name: its pages add to the database's.
        pageTotals[name, default: PageTotals()].add(branch: tally.branch, leaf: tally.leaf, overflow: tally.overflow)
        if !isSubTree { walkedEntries[name] = tally.entries }
        if tally.entries != record.entries {
            report(name, nil, "it claims \(record.entries) entries, its pages hold \(tally.entries)")
        }
        // Each tree's record counts its own pages: a database with sorted duplicates leaves out its duplicates'
        // sub-trees, as this tally does (they are walked with a tally of their own, against their own records). A
        // sub-tree claiming wrongly passed `verify` and made `stats` add what it claimed (review-89 D1), and so did
        // a database with sorted duplicates (review-90 R2).
        if (tally.branch, tally.leaf, tally.overflow) != (record.branchPages, record.leafPages, record.overflowPages) {
            report(
                name, nil,
                "it claims \(record.branchPages)/\(record.leafPages)/\(record.overflowPages) branch/leaf/overflow "
                    + "pages, its tree has \(tally.branch)/\(tally.leaf)/\(tally.overflow)")
        }
    }

    private struct TreeOptions {
        let name: String
        let depth: Int
        let isMain: Bool
        let ordered: Bool
        let dupSort: Bool
        /// `MDB_DUPFIXED`: duplicates of one size, in `P_LEAF2` sub-pages (LocalStorageKit makes none).
        let dupFixed: Bool
        let freeList: Bool
    }

    /// The keys a page's parent gives it in a tree in key order: from the separator of the page's node in
    /// the parent, up to the next one (nil: no bound).
    struct KeyRange {
        var lower: ArraySlice<UInt8>?
        var upper: ArraySlice<UInt8>?

        /// Whether `key` is at least `lower` and below `upper` (LMDB's order: bytes, then length).
        func contains(_ key: ArraySlice<UInt8>) -> Bool {
            if let lower, key.lexicographicallyPrecedes(lower) { return false }
            if let upper, !key.lexicographicallyPrecedes(upper) { return false }
            return true
        }
    }

    /// Claims pages `first ..< first + count` for a tree; false (reported) when one is outside the file or
    /// used already.
    mutating func claim(_ first: UInt64, count: UInt64, in name: String) -> Bool {
        guard first >= 2, count >= 1, first < UInt64(used.count), count <= UInt64(used.count) - first else {
            report(name, first, "the page reference lies outside the file's \(used.count) pages")
            return false
        }
        for page in Int(first)..<Int(first + count) where used[page] {
            report(name, UInt64(page), "the page is referenced twice")
            return false
        }
        for page in Int(first)..<Int(first + count) { used[page] = true }
        return true
    }

    private mutating func visitPage(
        _ number: UInt64, level: Int, options: TreeOptions, range: KeyRange, tally: inout Tally
    ) {
        let name = options.name
        guard claim(number, count: 1, in: name), let page = pages.page(number) else { return }
        guard loadInteger(page, 0, as: UInt64.self) == number else {
            report(name, number, "the page calls itself page \(loadInteger(page, 0, as: UInt64.self))")
            return
        }
        let flags = loadInteger(page, 10, as: UInt16.self)
        let isLeaf = level == options.depth
        let expected = isLeaf ? DataFilePages.leaf : DataFilePages.branch
        // Exactly: LMDB clears its in-memory flags before it writes a page, and one left set misleads it (a page
        // marked dirty is changed in place, inside the read-only map: SIGSEGV in a delete).
        guard flags == expected else {
            report(name, number, "a \(isLeaf ? "leaf" : "branch") page was expected (flags \(flags))")
            // A salvage still reads a page of the right kind that carries a stray flag.
            let kind = DataFilePages.branch | DataFilePages.leaf | DataFilePages.overflow | DataFilePages.meta
            guard salvaging, flags & kind == expected, flags & DataFilePages.leaf2 == 0 else { return }
            return visitNodes(page, number, isLeaf: isLeaf, level: level, options: options, range: range, tally: &tally)
        }
        visitNodes(page, number, isLeaf: isLeaf, level: level, options: options, range: range, tally: &tally)
    }

    /// The nodes of a branch or leaf page whose header the walk checked.
    private mutating func visitNodes(
        _ page: [UInt8], _ number: UInt64, isLeaf: Bool, level: Int, options: TreeOptions, range: KeyRange,
        tally: inout Tally
    ) {
        let name = options.name
        let pageSize = pages.pageSize
        if isLeaf { tally.leaf += 1 } else { tally.branch += 1 }
        guard let nodes = nodeOffsets(page, size: pageSize, in: name, page: number) else { return }
        // A page outside the range its parent gives is not this tree's: a damaged reference leads to another
        // tree's page (or to one this tree no longer uses). The damage is the reference's; the page is left to
        // its own tree, which reads it (a salvage keeps its records) without calling it referenced twice.
        if options.ordered, !isInRange(page, nodes, isLeaf: isLeaf, range) {
            report(name, number, "its keys lie outside the range its parent branch gives it")
            used[Int(number)] = false
            if isLeaf { tally.leaf -= 1 } else { tally.branch -= 1 }
            return
        }
        if let overlap = overlappingNode(page, nodes, size: pageSize, isLeaf: isLeaf) {
            report(name, number, overlap)
            if !salvaging { return }
        }
        // Keys are compared where they lie in the page: a copy of each cost most of a walk of a large store.
        var previous: ArraySlice<UInt8>? = nil
        var disordered = false
        for (index, offset) in nodes.enumerated() {
            let keySize = Int(loadInteger(page, offset + 6, as: UInt16.self))
            let keyStart = offset + DataFilePages.nodeSize
            guard keyStart + keySize <= pageSize else {
                report(name, number, "a key runs past the end of the page")
                if salvaging { continue }
                return
            }
            let key = page[keyStart..<keyStart + keySize]
            if options.ordered, !(index == 0 && !isLeaf) {
                if let previous, !previous.lexicographicallyPrecedes(key), !disordered {
                    report(name, number, "its keys are out of order")
                    if !salvaging { return }
                    disordered = true  // Reported once per page.
                }
                previous = key
            }
            let low = UInt64(loadInteger(page, offset, as: UInt16.self))
            let high = UInt64(loadInteger(page, offset + 2, as: UInt16.self))
            let nodeFlags = loadInteger(page, offset + 4, as: UInt16.self)
            if !isLeaf {
                var child = range
                if options.ordered {
                    if index > 0 { child.lower = key }
                    if index + 1 < nodes.count, let next = self.key(page, at: nodes[index + 1]) { child.upper = next }
                }
                visitPage(
                    low | high << 16 | UInt64(nodeFlags) << 32, level: level + 1, options: options, range: child,
                    tally: &tally)
                continue
            }
            leafNode(
                key: key, dataSize: Int(low | high << 16), flags: nodeFlags, page: page, dataStart: keyStart + keySize,
                pageNumber: number, options: options, tally: &tally)
        }
    }

    /// One entry of a leaf page: its value (inline or on overflow pages), and what it holds: a named
    /// database (main), a free-page list, sorted duplicates (a sub-page or a sub-tree), or a plain value.
    private mutating func leafNode(
        key: ArraySlice<UInt8>, dataSize: Int, flags: UInt16, page: [UInt8], dataStart: Int, pageNumber: UInt64,
        options: TreeOptions, tally: inout Tally
    ) {
        let name = options.name
        let pageSize = pages.pageSize
        // Only what the walk reads inside a value, or hands on, is copied out of its page (or read from its
        // overflow pages): a plain value of a database nobody collects is only checked to lie inside them.
        let needsValue =
            flags & DataFilePages.dupData != 0 || (options.isMain && flags & DataFilePages.subData != 0)
            || options.freeList || collects(name)
        let value: [UInt8]
        if flags & DataFilePages.bigData != 0 {
            guard dataStart + 8 <= pageSize else {
                return report(name, pageNumber, "a value reference runs past the page")
            }
            let first = loadInteger(page, dataStart, as: UInt64.self)
            let count = UInt64((DataFilePages.headerSize - 1 + dataSize) / pageSize + 1)
            guard claim(first, count: count, in: name), let head = pages.page(first) else { return }
            guard loadInteger(head, 0, as: UInt64.self) == first,
                loadInteger(head, 10, as: UInt16.self) == DataFilePages.overflow,
                UInt64(loadInteger(head, 12, as: UInt32.self)) >= count
            else { return report(name, first, "an overflow page of \(count) pages was expected") }
            tally.overflow += count
            let start = Int(first) * pageSize + DataFilePages.headerSize
            guard needsValue else {
                guard dataSize <= pages.fileLength - start else {
                    return report(name, first, "a value runs past the end of the file")
                }
                tally.entries += 1
                return
            }
            guard let bytes = pages.bytes(at: start, count: dataSize) else {
                return report(name, first, "a value runs past the end of the file")
            }
            value = bytes
        } else {
            guard dataStart + dataSize <= pageSize else {
                return report(name, pageNumber, "a value runs past the end of the page")
            }
            guard needsValue else {
                tally.entries += 1
                return
            }
            value = Array(page[dataStart..<dataStart + dataSize])
        }
        if flags & DataFilePages.dupData != 0 {
            guard options.dupSort else { return report(name, pageNumber, "duplicates in a database without them") }
            if flags & DataFilePages.subData != 0 {
                guard value.count == DatabaseRecord.size else {
                    return report(name, pageNumber, "a sub-database record has \(value.count) bytes")
                }
                let sub = DatabaseRecord(value, at: 0)
                // What a sub-database's record claims is read from the file: claims no file could hold are
                // damage, reported and not added (the sums of what is added cannot overflow).
                let filePages = UInt64(used.count)
                let subPages = [sub.branchPages, sub.leafPages, sub.overflowPages]
                if countsSubTreesFromRecords {
                    guard subPages.allSatisfy({ $0 <= filePages }) else {
                        return report(
                            name, pageNumber,
                            "a sub-database record claims \(sub.branchPages)/\(sub.leafPages)/\(sub.overflowPages) "
                                + "branch/leaf/overflow pages, the file has \(filePages)")
                    }
                    pageTotals[name, default: PageTotals()].add(
                        branch: sub.branchPages, leaf: sub.leafPages, overflow: sub.overflowPages)
                } else {
                    walk(name, sub, isSubTree: true)
                }
                guard sub.entries <= UInt64(pages.fileLength) else {
                    return report(
                        name, pageNumber,
                        "a sub-database record claims \(sub.entries) entries, more than the file has bytes")
                }
                tally.entries = tally.entries.adding(saturating: sub.entries)
            } else {
                tally.entries += duplicates(inSubpage: value, in: name, page: pageNumber, dupFixed: options.dupFixed)
            }
            return
        }
        tally.entries += 1
        if options.isMain, flags & DataFilePages.subData != 0 {
            guard value.count == DatabaseRecord.size else {
                return report(name, pageNumber, "a database record has \(value.count) bytes")
            }
            let databaseName = String(decoding: key, as: UTF8.self)
            let record = DatabaseRecord(value, at: 0)
            // Only a salvage reads on past keys out of order, where a changed byte can make two names one: which
            // of the two trees is the database cannot be told, and a salvage must not put one type's records
            // under another type.
            guard databases[databaseName] == nil else {
                ambiguous.insert(databaseName)
                ambiguousEntries &+= record.entries
                return report(name, pageNumber, "the database name \(databaseName) appears twice")
            }
            databases[databaseName] = record
            if walks(databaseName) {
                walk(databaseName, record)
            } else if checksRootOf(databaseName) {
                checkRoot(databaseName, record)
            }
        } else if options.freeList {
            let count = Int(clamping: loadInteger(value, 0, as: UInt64.self))
            guard count < value.count / 8 else { return report(name, pageNumber, "a free-page list is cut short") }
            for index in 1...max(1, count) where count > 0 {
                let free = loadInteger(value, index * 8, as: UInt64.self)
                // A free page may lie past the file's end (never written); it may not lie past the meta's last.
                guard free >= 2, free <= meta.lastPage else {
                    return report(name, pageNumber, "the free-page list names page \(free), outside the file")
                }
                freeListed.append(free)
            }
        } else if collects(name) {
            visit(name, Array(key), value)
        }
    }
}
