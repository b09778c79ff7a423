import CLMDB

/// A named database of an environment, by its handle: what the layers above LMDB/ hold instead of
/// LMDB's `MDB_dbi`.
struct Database: Sendable, Hashable {
    let handle: MDB_dbi

    /// LMDB's free-page database.
    static let freePages = Database(handle: 0)
    /// LMDB's main database, which names every other.
    static let main = Database(handle: 1)
}

/// Where a cursor moves (LMDB's cursor operations the store uses).
enum CursorMove {
    case first, last, next, previous
    /// The first pair of the next key (`MDB_NEXT_NODUP`).
    case nextKey
    /// The last duplicate of the current key (`MDB_LAST_DUP`).
    case lastDuplicate
    /// The pair under the cursor (`MDB_GET_CURRENT`).
    case current

    var operation: MDB_cursor_op {
        switch self {
        case .first: MDB_FIRST
        case .last: MDB_LAST
        case .next: MDB_NEXT
        case .previous: MDB_PREV
        case .nextKey: MDB_NEXT_NODUP
        case .lastDuplicate: MDB_LAST_DUP
        case .current: MDB_GET_CURRENT
        }
    }
}

/// Page figures of one database (`MDB_stat`).
struct DatabaseStatistics {
    let pageSize: Int
    var branchPages: Int
    var leafPages: Int
    var overflowPages: Int
    let entries: Int
    /// Levels of the B-tree (0 for an empty database).
    let depth: Int

    init(_ stat: MDB_stat) {
        pageSize = Int(stat.ms_psize)
        depth = Int(stat.ms_depth)
        branchPages = Self.plausible(stat.ms_branch_pages)
        leafPages = Self.plausible(stat.ms_leaf_pages)
        overflowPages = Self.plausible(stat.ms_overflow_pages)
        entries = Self.plausible(stat.ms_entries)
    }

    /// A count LMDB keeps in the file (entries, pages), which it never checks: kept within 0...2^48, so that
    /// the sums of such counts (a store's records, its pages, a limit's total) never overflow. Damaged, a count
    /// is wrong (`verify` reports it), never a trap (review-89 R1).
    static func plausible(_ count: Int) -> Int {
        min(max(count, 0), 1 << 48)
    }

    /// ``plausible(_:)`` of a count read from the file as unsigned (a database record's, a walk's sum).
    static func plausible(_ count: UInt64) -> Int {
        Int(min(count, 1 << 48))
    }
}

/// Figures of an environment (`MDB_envinfo`).
struct EnvironmentInfo {
    let mapSize: Int
    let lastPage: Int
    let maxReaders: Int
    let lastTransactionID: Int

    init(_ info: MDB_envinfo) {
        mapSize = info.me_mapsize
        lastPage = info.me_last_pgno
        maxReaders = Int(info.me_maxreaders)
        lastTransactionID = info.me_last_txnid
    }
}

extension LMDBError {
    /// No such key or database (`MDB_NOTFOUND`).
    var isNotFound: Bool { code == MDB_NOTFOUND }
    /// A database was opened with flags its stored form contradicts, or a name that is a plain entry of the main
    /// database (`MDB_INCOMPATIBLE`).
    var isIncompatible: Bool { code == MDB_INCOMPATIBLE }
    /// The environment has opened as many databases as `maxdbs` allows (`MDB_DBS_FULL`).
    var isDatabasesFull: Bool { code == MDB_DBS_FULL }
    /// The file is not an LMDB store (`MDB_INVALID`).
    var isInvalidFile: Bool { code == MDB_INVALID }
    /// The store was made by another LMDB version (`MDB_VERSION_MISMATCH`).
    var isVersionMismatch: Bool { code == MDB_VERSION_MISMATCH }

    /// A database or key that must exist does not.
    static func notFound(_ call: String, caller: String = #function) -> LMDBError {
        LMDBError(code: MDB_NOTFOUND, call: call, caller: caller)
    }
}
