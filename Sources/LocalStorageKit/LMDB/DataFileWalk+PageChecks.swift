/// What a walk checks inside one page: node offsets and extents, the duplicates of a sub-page, root pages.
extension DataFileWalk {
    /// The node offsets of a page (or sub-page) of `size` bytes, checked against its bounds.
    mutating func nodeOffsets(_ page: [UInt8], size: Int, in name: String, page number: UInt64) -> [Int]? {
        let lower = Int(loadInteger(page, 12, as: UInt16.self))
        let upper = Int(loadInteger(page, 14, as: UInt16.self))
        guard lower >= DataFilePages.headerSize, lower <= upper, upper <= size,
            (lower - DataFilePages.headerSize) % 2 == 0
        else {
            report(name, number, "its bounds \(lower)…\(upper) are impossible")
            return nil
        }
        let count = (lower - DataFilePages.headerSize) / 2
        guard count >= 1 else {
            report(name, number, "the page holds no nodes")
            return nil
        }
        var offsets: [Int] = []
        for index in 0..<count {
            let offset = Int(loadInteger(page, DataFilePages.headerSize + 2 * index, as: UInt16.self))
            guard offset >= upper, offset + DataFilePages.nodeSize <= size else {
                report(name, number, "node \(index) lies outside the page's nodes")
                return nil
            }
            offsets.append(offset)
        }
        return offsets
    }

    /// What is wrong when a node of a page (or sub-page) of `size` bytes runs into the next one or past the
    /// page's end: LMDB reads each node as far as its sizes say, so a size that grew by one bit makes it read
    /// and write its neighbour (a repair in place of such a page ended with SIGBUS, and `clear` with heap
    /// corruption). A leaf node holds its key and value (or an 8-byte overflow page number); a branch node,
    /// and a node of a duplicates sub-page, its key alone.
    func overlappingNode(_ page: [UInt8], _ nodes: [Int], size: Int, isLeaf: Bool) -> String? {
        var extents: [(start: Int, end: Int)] = []
        extents.reserveCapacity(nodes.count)
        for offset in nodes {
            var end = offset + DataFilePages.nodeSize + Int(loadInteger(page, offset + 6, as: UInt16.self))
            if isLeaf {
                let flags = loadInteger(page, offset + 4, as: UInt16.self)
                let low = Int(loadInteger(page, offset, as: UInt16.self))
                let dataSize = low | Int(loadInteger(page, offset + 2, as: UInt16.self)) << 16
                end += flags & DataFilePages.bigData != 0 ? 8 : dataSize
            }
            extents.append((offset, end))
        }
        extents.sort { $0.start < $1.start }
        for (index, extent) in extents.enumerated() {
            let limit = index + 1 < extents.count ? extents[index + 1].start : size
            if extent.end > limit {
                return index + 1 < extents.count
                    ? "the node at byte \(extent.start) runs into the next one" : "a node runs past the end of the page"
            }
        }
        return nil
    }

    /// The number of duplicates a sub-page holds, its bounds checked.
    mutating func duplicates(
        inSubpage value: [UInt8], in name: String, page: UInt64, dupFixed: Bool
    ) -> UInt64 {
        guard value.count >= DataFilePages.headerSize,
            loadInteger(value, 10, as: UInt16.self) & (DataFilePages.leaf | DataFilePages.subpage)
                == DataFilePages.leaf | DataFilePages.subpage
        else {
            report(name, page, "a duplicates sub-page has no sub-page header")
            return 0
        }
        if loadInteger(value, 10, as: UInt16.self) & DataFilePages.leaf2 != 0 {
            guard dupFixed else {
                report(name, page, "a duplicates sub-page of fixed-size values in a database without them")
                return 0
            }
            let lower = Int(loadInteger(value, 12, as: UInt16.self))
            return UInt64(max(0, lower - DataFilePages.headerSize) / 2)
        }
        guard let nodes = nodeOffsets(value, size: value.count, in: name, page: page) else { return 0 }
        if let overlap = overlappingNode(value, nodes, size: value.count, isLeaf: false) {
            report(name, page, "a duplicates sub-page: \(overlap)")
            return 0
        }
        for offset in nodes {
            let keySize = Int(loadInteger(value, offset + 6, as: UInt16.self))
            guard offset + DataFilePages.nodeSize + keySize <= value.count else {
                report(name, page, "a duplicate runs past its sub-page")
                return 0
            }
            // LMDB writes a duplicate as a key alone: no value, no flags. Anything else would send it off to an
            // overflow page or a sub-database that does not exist (SIGSEGV in a listing by that value).
            guard loadInteger(value, offset, as: UInt32.self) == 0, loadInteger(value, offset + 4, as: UInt16.self) == 0
            else {
                report(name, page, "a duplicate in a sub-page has a value or flags")
                return 0
            }
        }
        return UInt64(nodes.count)
    }

    /// Checks the root page of each of `databases`, as a walk checks those it does not ``walks``.
    mutating func checkRoots(_ databases: [(name: String, record: DatabaseRecord)]) {
        for (name, record) in databases { checkRoot(name, record) }
    }

    /// The root page of a database: inside the file, used once, naming itself, of the kind its depth needs.
    mutating func checkRoot(_ name: String, _ record: DatabaseRecord) {
        guard record.root != DataFilePages.invalidPage else { return }
        guard claim(record.root, count: 1, in: name), let page = pages.page(record.root) else { return }
        let expected = record.depth == 1 ? DataFilePages.leaf : DataFilePages.branch
        let flags = loadInteger(page, 10, as: UInt16.self)
        guard loadInteger(page, 0, as: UInt64.self) == record.root, flags == expected else {
            return report(name, record.root, "its root page is not a \(record.depth == 1 ? "leaf" : "branch") page")
        }
    }

    /// The key of the node at `offset`, or nil when it runs past the page.
    func key(_ page: [UInt8], at offset: Int) -> ArraySlice<UInt8>? {
        let keySize = Int(loadInteger(page, offset + 6, as: UInt16.self))
        let keyStart = offset + DataFilePages.nodeSize
        guard keyStart + keySize <= pages.pageSize else { return nil }
        return page[keyStart..<keyStart + keySize]
    }

    /// Whether the first and last keys of a page lie in `range` (a branch page's first key is not one: LMDB
    /// never reads it). Keys in between are checked for order as the walk goes.
    func isInRange(_ page: [UInt8], _ nodes: [Int], isLeaf: Bool, _ range: KeyRange) -> Bool {
        let checked = isLeaf ? nodes[...] : nodes.dropFirst()
        for offset in [checked.first, checked.last].compactMap({ $0 }) {
            if let key = key(page, at: offset), !range.contains(key) { return false }
        }
        return true
    }
}
