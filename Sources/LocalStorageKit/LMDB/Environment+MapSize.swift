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

    /// Adopts a map size another process set (`MDB_MAP_RESIZED`).
    func adoptMapSize() throws {
        try gate.withExclusive { () throws in
            try check(mdb_env_set_mapsize(handle, 0), "mdb_env_set_mapsize")
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            mapSize.withLock { $0 = info.me_mapsize }
        }
    }

    /// Rounds a map size up to a multiple of 64 KiB (a multiple of every OS page size), at most
    /// ``largestMapSize`` (`Int.max` for "no limit" trapped on overflow).
    static func rounded(_ size: Int) -> Int {
        let unit = 64 * 1024
        return max(unit, (min(size, largestMapSize) + unit - 1) / unit * unit)
    }

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

    /// Writes a compacted copy of the environment into `directory` (`mdb_env_copy2`).
    func copyCompacted(to directory: String) throws {
        // The copy walks every tree inside LMDB: every page is checked first.
        try Environment.checkPages(handle, everyPage: true)
        try check(directory.withCString { mdb_env_copy2(handle, $0, UInt32(MDB_CP_COMPACT)) }, "mdb_env_copy2")
    }
}
