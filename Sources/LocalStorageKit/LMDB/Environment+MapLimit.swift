import CLMDB

extension Environment {
    /// The reserve kept past `maxMapSize`: 1/32 of it, at least 1 MiB, in whole 64 KiB units.
    static func reserve(for maxMapSize: Int) -> Int {
        rounded(max(1 << 20, maxMapSize / 32))
    }

    /// The largest the map ever gets: ``maxMapSize`` plus ``reserve``, or the data the store held when it opened plus
    /// ``reserve`` when that was more (a store that grew under a larger limit: a delete there needs free pages as
    /// anywhere, and without them nothing, not even `deleteAll`, could bring the store back under its limit).
    /// Anchored at the open, so that commits in the reserve never move its end.
    var hardMapLimit: Int { max(Environment.rounded(maxMapSize), Environment.rounded(usedBytesAtOpen)) + reserve }

    /// Doubles the map, up to ``maxMapSize``, or with `intoReserve` up to ``hardMapLimit``; false when it is
    /// already at that limit.
    ///
    /// LMDB's copy-on-write means that a delete needs free pages too: only commits that leave the store no
    /// larger grow into the reserve (the writer checks it, see ``StoreTotals``).
    func growMap(intoReserve: Bool = false) throws -> Bool {
        try gate.withExclusive { () throws -> Bool in
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            let current = info.me_mapsize
            let limit = intoReserve ? hardMapLimit : maxMapSize
            guard current < limit else { return false }
            let roomy = min(Environment.rounded(min(limit, max(current * 2, current + 1 << 20))), limit)
            // The process's address space is a limit too (iOS, `ulimit -v`): a smaller step where doubling does not
            // fit, and past the last that fits the map is full.
            let sizes = Environment.sizesFromRoomy(upTo: roomy, downTo: min(current + 1 << 20, roomy))
            guard let next = sizes.first(where: { $0 > current && $0 <= limit && Environment.canMap($0) }) else {
                return false
            }
            try check(mdb_env_set_mapsize(handle, next), "mdb_env_set_mapsize")
            mdb_env_info(handle, &info)
            mapSize.withLock { $0 = info.me_mapsize }
            return true
        }
    }

    /// Shrinks the map back to ``maxMapSize`` when a commit grew it into the reserve (or this process
    /// adopted such a size), so that a commit that adds data cannot use the reserve. The map never shrinks
    /// below the pages the data file uses: LMDB keeps those.
    func keepWithinMaxMapSize() throws {
        guard currentMapSize > Environment.rounded(maxMapSize) else { return }
        try gate.withExclusive { () throws in
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            var stat = MDB_stat()
            try check(mdb_env_stat(handle, &stat), "mdb_env_stat")
            let used = (info.me_last_pgno + 1) * Int(stat.ms_psize)
            let target = max(Environment.rounded(maxMapSize), used)
            guard info.me_mapsize > target else { return }
            try check(mdb_env_set_mapsize(handle, target), "mdb_env_set_mapsize")
            mdb_env_info(handle, &info)
            mapSize.withLock { $0 = info.me_mapsize }
        }
    }
}
