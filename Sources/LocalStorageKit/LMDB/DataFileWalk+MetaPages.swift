/// Choosing the meta page a ``DataFileWalk`` starts from.
extension DataFileWalk {
    /// The meta page of the newest commit (or of commit `transactionID`), checked against the file;
    /// problems when neither meta page can be used.
    static func newestMeta(
        _ pages: inout DataFilePages, transactionID: UInt64? = nil
    ) -> (MetaPage?, [Problem]) {
        let (metas, problems) = usableMetas(&pages)
        guard let transactionID else { return (metas.first, problems) }
        // A read transaction reads meta page `id & 1`: when a damaged page names the other's transaction too,
        // the walk reads the page LMDB reads.
        let same = metas.filter { $0.transactionID == transactionID }
        return (same.first { UInt64($0.number) == transactionID & 1 } ?? same.first, problems)
    }

    /// The meta pages that can describe this file, newest first, and what is wrong with the others.
    ///
    /// A meta page may name more pages than the file holds: pages a commit allocated and freed again before
    /// it wrote them (LMDB's loose pages) are on the free list but never written. The walk checks that every
    /// page past the file's end is free (``run()``).
    static func usableMetas(_ pages: inout DataFilePages) -> ([MetaPage], [Problem]) {
        let metas = pages.metaPages()
        var problems: [Problem] = []
        if metas.count < 2 {
            problems.append(
                Problem(database: "meta", page: nil, detail: "\(2 - metas.count) meta page(s) cannot be read"))
        }
        var usable: [MetaPage] = []
        for meta in metas.sorted(by: { $0.transactionID > $1.transactionID }) {
            let needed = (meta.lastPage &+ 1).multipliedReportingOverflow(by: UInt64(max(1, meta.pageSize)))
            if meta.pageSize < 512 || needed.overflow || meta.lastPage == .max {
                let pages = meta.lastPage == .max ? "2⁶⁴" : "\(meta.lastPage + 1)"
                problems.append(
                    Problem(
                        database: "meta", page: UInt64(meta.number),
                        detail: "it names \(pages) pages of \(meta.pageSize) bytes, which no file can hold"))
            } else if meta.transactionID >= 1 << 63 {
                // LMDB's transaction ids are `size_t`: past 2⁶³ no store ever committed, and Swift sees them as
                // negative `Int`s.
                problems.append(
                    Problem(
                        database: "meta", page: UInt64(meta.number),
                        detail: "it names transaction \(meta.transactionID), which no store ever reached"))
            } else {
                usable.append(meta)
            }
        }
        // One of two meta pages naming the same transaction is damaged: LMDB reads one or the other depending on
        // how it opens the file (page `id & 1` with its lock file, page 0 without), so two commits pass for one.
        if usable.count == 2, usable[0].transactionID == usable[1].transactionID {
            problems.append(metaTie(usable[0].transactionID))
        }
        return (usable, problems)
    }

    /// The problem of two meta pages naming one transaction.
    static func metaTie(_ transactionID: UInt64) -> Problem {
        Problem(
            database: "meta", page: nil,
            detail: "both meta pages name transaction \(transactionID): one of them is damaged")
    }
}
