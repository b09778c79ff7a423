import CLMDB
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Growing the map, adopting another process's map size, and compacted copies.
extension Environment {
    // MARK: - Map size

    /// Adopts a map size another process set (`MDB_MAP_RESIZED`). A size this process cannot map (less address
    /// space than the process that grew it: an app extension) throws `ENOMEM` before the map is touched: LMDB
    /// unmaps the map before it maps the new one, and a failed mapping left the environment without a map.
    ///
    /// The size the data file records is the largest any process mapped (LMDB never lowers it), which is all of
    /// `maxMapSize` once a process that maps it whole at open has committed (``openingMapSize(mapSize:maxMapSize:growsFromMapSize:)``).
    /// A process that cannot map that much (iOS and its extensions, `ulimit -v`) maps what it needs instead:
    /// twice its map, or the data, whichever is larger, as long as that is less than the recorded size; and when
    /// that does not fit either, the data alone.
    func adoptMapSize() throws {
        try gate.withExclusive { () throws in
            let newest = Environment.newestMeta(dataFile: path + "/data.mdb")
            if let newest, newest.mapSize > currentMapSize, !Environment.canMap(newest.mapSize) {
                let (needed, overflow) = Int(clamping: newest.lastPage &+ 1).multipliedReportingOverflow(
                    by: newest.pageSize)
                // Twice the map when that fits, else less room past the data, down to the data alone (one doubling
                // behind the other process, or room for the data but not for twice the map).
                let sizes = Environment.sizesFromRoomy(upTo: max(2 * currentMapSize, needed), downTo: needed)
                guard !overflow, let enough = sizes.first(where: { $0 < newest.mapSize && Environment.canMap($0) })
                else {
                    throw LMDBError(code: ENOMEM, call: "mdb_env_set_mapsize", caller: "adoptMapSize()")
                }
                try check(mdb_env_set_mapsize(handle, enough), "mdb_env_set_mapsize")
            } else {
                try check(mdb_env_set_mapsize(handle, 0), "mdb_env_set_mapsize")
            }
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            mapSize.withLock { $0 = info.me_mapsize }
        }
    }

    /// Map sizes to try, largest first: `roomy`, then halving the room past `needed` while it is more than 1 MiB,
    /// then `needed` itself, each rounded (``rounded(_:)``).
    static func sizesFromRoomy(upTo roomy: Int, downTo needed: Int) -> [Int] {
        var sizes: [Int] = []
        var candidate = max(roomy, needed)
        while candidate - needed > 1 << 20 {
            sizes.append(rounded(candidate))
            candidate = needed + (candidate - needed) / 2
        }
        sizes.append(rounded(candidate))
        return sizes
    }

    /// Rounds a map size up to a multiple of 64 KiB (a multiple of every OS page size), at most
    /// ``largestMapSize`` (`Int.max` for "no limit" trapped on overflow).
    static func rounded(_ size: Int) -> Int {
        let unit = 64 * 1024
        return max(unit, (min(size, largestMapSize) + unit - 1) / unit * unit)
    }

    /// The newest of the data file's two meta pages (the last commit's: its map size is what
    /// `mdb_env_set_mapsize(_, 0)` adopts), or nil when the file cannot be read.
    static func newestMeta(dataFile: String) -> MetaPage? {
        let descriptor = open(dataFile, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { closeFile(descriptor) }
        var pages = DataFilePages(descriptor: descriptor)
        return pages.metaPages().max { $0.transactionID < $1.transactionID }
    }

    /// The map a store opens with: all of `maxMapSize` (at most ``largestMapAtOpen``, beyond which it grows as
    /// before) where the process can map it, otherwise `mapSize`, from which the map doubles on demand. A map that grows has to
    /// end every transaction of the process first, so a `write` body whose own writes fill the map would be
    /// aborted and run again; mapped whole, it never is (short of `maxMapSize` itself, where it fails with
    /// `storageFull`). Mapping costs address space only: LMDB writes pages into the file as it uses them, and
    /// the file grows with the data. iOS, its extensions and their relatives get little address space
    /// (another process on the store, an extension, adopts the map size the data file records), so there the
    /// map always grows from `mapSize`.
    static func openingMapSize(mapSize: Int, maxMapSize: Int, growsFromMapSize: Bool) -> Int {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        return mapSize
        #else
        let whole = rounded(min(max(mapSize, maxMapSize), largestMapAtOpen))
        guard !growsFromMapSize, whole > rounded(mapSize), canMap(whole) else { return mapSize }
        return whole
        #endif
    }

    /// The largest map a store maps at open (``openingMapSize(mapSize:maxMapSize:growsFromMapSize:)``): 64 GiB, the
    /// default `maxMapSize`. Each open store takes that much address space (not memory): a 47-bit address space
    /// holds some 2,000 of them.
    static let largestMapAtOpen = 64 << 30

    /// The largest map asked of LMDB: 64 TiB, more than a 64-bit process can map (47 bits of address space).
    static let largestMapSize = 1 << 46

    /// Whether `size` bytes of address space can be mapped now: `mdb_env_set_mapsize` unmaps the map before it
    /// maps the larger one, and a failed map leaves the environment without one (the next read crashes).
    static func canMap(_ size: Int) -> Bool {
        let probe = mmap(nil, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        guard let probe, probe != MAP_FAILED else { return false }
        munmap(probe, size)
        return true
    }

    // MARK: - Copy

    /// Writes a compacted copy of the environment, its trees packed full, into `data.mdb` in `directory`, from
    /// one snapshot (``RepackingCopy``).
    ///
    /// The copy opens a handle for each database in its read transaction, which LMDB allows only while no other
    /// transaction of the process may open one: it holds ``HandleOpeningLock`` throughout, so a store of this
    /// process on the same environment waits to write or to open a type's databases until the copy is done.
    func copyCompacted(to directory: String) throws {
        // The copy walks every tree: every page is checked first.
        try Environment.checkPages(handle, everyPage: true)
        try handleOpening.withLock {
            // The copy is never larger than the pages its snapshot uses, plus a few a commit leaves free; twice the
            // pages used now leaves room for what another process writes before the snapshot is taken.
            var info = MDB_envinfo()
            try check(mdb_env_info(handle, &info), "mdb_env_info")
            var stat = MDB_stat()
            try check(mdb_env_stat(handle, &stat), "mdb_env_stat")
            let used = (info.me_last_pgno + 1) * Int(stat.ms_psize)
            try RepackingCopy.copy(
                from: handle, toFile: Environment.file("data.mdb", in: directory),
                mapSize: 2 * used + RepackingCopy.slack, fileMode: 0o600)
        }
    }
}
