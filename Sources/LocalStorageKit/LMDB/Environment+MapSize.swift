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

    /// Rounds a map size up to a multiple of 64 KiB (a multiple of every OS page size).
    static func rounded(_ size: Int) -> Int {
        let unit = 64 * 1024
        return max(unit, (size + unit - 1) / unit * unit)
    }

    // MARK: - Copy

    /// Writes a compacted copy of the environment into `directory` (`mdb_env_copy2`).
    func copyCompacted(to directory: String) throws {
        // The copy walks every tree inside LMDB: every page is checked first.
        try Environment.checkPages(handle, everyPage: true)
        try check(directory.withCString { mdb_env_copy2(handle, $0, UInt32(MDB_CP_COMPACT)) }, "mdb_env_copy2")
    }
}
