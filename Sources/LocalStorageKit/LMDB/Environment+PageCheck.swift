import CLMDB
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Environment {
    /// Checks, before LMDB reads any tree, what every read and write of the store needs: the meta page of
    /// the newest commit, the free-page database and its lists, the main database, every page of `meta` and
    /// the root page of each other database it names (``DataFileWalk`` that ``DataFileWalk/walks`` `meta`
    /// alone). Cost: the pages of the main, free-page and `meta` databases, plus one page per named database.
    ///
    /// - Throws: ``DamagedDataFile`` naming the first problem.
    ///
    /// With `typeRoots`, the root pages of the types' databases too, which an open leaves to each type's first
    /// use (``checkTypeRoots(number:names:in:)``). With `everyPage`, every page of every database: what a
    /// compaction needs before LMDB's compacting copy walks every tree (a damaged leaf ended it with SIGSEGV).
    static func checkPages(_ raw: OpaquePointer, typeRoots: Bool = false, everyPage: Bool = false) throws {
        var descriptor: Int32 = -1
        guard mdb_env_get_fd(raw, &descriptor) == MDB_SUCCESS, descriptor >= 0 else { return }
        // A read transaction pins the snapshot: its pages are not reused while the walk reads them.
        var txn: OpaquePointer?
        try check(mdb_txn_begin(raw, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        defer { mdb_txn_abort(txn) }
        var pages = DataFilePages(descriptor: descriptor)
        let (meta, problems) = DataFileWalk.newestMeta(&pages, transactionID: UInt64(UInt(bitPattern: mdb_txn_id(txn))))
        guard let meta else {
            throw DamagedDataFile(problem: problems.first.map(String.init(describing:)) ?? "no usable meta page")
        }
        // A compaction copies the snapshot LMDB picks, which on a tie is not always the one checked here.
        if everyPage, let tie = problems.first(where: { $0 == DataFileWalk.metaTie(meta.transactionID) }) {
            throw DamagedDataFile(problem: "\(tie)")
        }
        var walk = DataFileWalk(pages: pages, meta: meta)
        // The roots of the types' databases are checked at each type's first use (`checkTypeRoots`): a store
        // of many types would otherwise read several pages per type at every open.
        walk.checksRootOf = { typeRoots || !isTypeDatabase($0) }
        // The store's `meta` (type descriptions, layout, key check, dictionaries: a page or a few) is read whole
        // by every open: a value size with one bit changed there ended every command with SIGBUS.
        walk.walks = { everyPage || $0 == "meta" }
        walk.run()
        if let first = walk.problems.first { throw DamagedDataFile(problem: "\(first)") }
    }

    /// The page sizes an LMDB data file can have (LMDB 0.9 writes up to 32 KiB; 64 KiB in its development
    /// builds).
    static let pageSizes = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]

    /// Checks, from the file itself, the page size of the meta page LMDB is about to open the data file in
    /// `directory` with: `mdb_env_open` divides by it, so a damaged one (0) would end the process with SIGFPE.
    /// Nothing to check for a new store (no file yet) or a file that is not LMDB's (LMDB refuses it itself).
    ///
    /// - Throws: ``DamagedDataFile`` for a page size LMDB never writes.
    static func checkMetaPageSize(directory: String) throws {
        let path = Environment.file("data.mdb", in: directory)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { closeDescriptor(descriptor) }
        let pages = DataFilePages(descriptor: descriptor)
        guard let bytes = pages.bytes(at: 0, count: 152), let first = MetaPage(bytes, number: 0) else { return }
        // LMDB finds the second meta page one page size after the first, and opens the newer of the two.
        var newest = first
        if pageSizes.contains(first.pageSize), let bytes = pages.bytes(at: first.pageSize, count: 152),
            let second = MetaPage(bytes, number: 1), second.transactionID > first.transactionID
        {
            newest = second
        }
        guard pageSizes.contains(newest.pageSize) else {
            throw DamagedDataFile(
                problem: "meta page \(newest.number) names a page size of \(newest.pageSize) bytes, which LMDB never "
                    + "writes: the data file is damaged")
        }
    }

    /// Whether `name` is one of a type's databases (`r.N`, `u.N`, `e.N`, `s.N`, `i.N.S`; see ``TypeSchema``).
    static func isTypeDatabase(_ name: String) -> Bool {
        let bytes = Array(name.utf8.prefix(3))
        return bytes.count == 3 && "ruesi".utf8.contains(bytes[0]) && bytes[1] == UInt8(ascii: ".")
            && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[2])
    }

    /// Checks the root pages of type `number`'s databases `names` in `txn`'s snapshot, once per type and
    /// environment (what opening the store leaves to the first use of each type): the records of the databases
    /// come from the main database, which the open checked, and each root page is read with `pread`.
    ///
    /// - Throws: ``DamagedDataFile`` naming the first problem.
    static func checkTypeRoots(number: UInt32, names: @autoclosure () -> [String], in txn: Transaction) throws {
        let raw = mdb_txn_env(txn.handle)
        let memo = TypeRootChecks.of(raw)
        if memo?.isChecked(number) == true { return }
        var descriptor: Int32 = -1
        guard mdb_env_get_fd(raw, &descriptor) == MDB_SUCCESS, descriptor >= 0 else { return }
        var records: [(name: String, record: DatabaseRecord)] = []
        for name in names() {
            // The main database (handle 1) holds each named database's record as of the last commit; one this
            // transaction created holds no root page yet, which the check skips.
            guard let value = try txn.get(Database(handle: 1), key: Array(name.utf8)),
                value.count == DatabaseRecord.size
            else { continue }
            records.append((name, DatabaseRecord(Array(value), at: 0)))
        }
        var pages = DataFilePages(descriptor: descriptor)
        // A write transaction's id is the next commit's: its snapshot is the commit before. A read transaction's
        // meta page may have been overwritten by two commits since it began: the newest then bounds the file
        // (which never shrinks), and the reader keeps its snapshot's pages from being reused.
        let snapshot = UInt64(UInt(bitPattern: mdb_txn_id(txn.handle))) &- (txn.isReadOnly ? 0 : 1)
        let (exact, problems) = DataFileWalk.newestMeta(&pages, transactionID: snapshot)
        let meta = exact ?? DataFileWalk.newestMeta(&pages).0
        guard let meta else {
            throw DamagedDataFile(problem: problems.first.map(String.init(describing:)) ?? "no usable meta page")
        }
        var walk = DataFileWalk(pages: pages, meta: meta)
        walk.checkRoots(records)
        if let first = walk.problems.first { throw DamagedDataFile(problem: "\(first)") }
        memo?.markChecked(number)
    }

    /// Whether type `number`'s databases failed their check in this environment.
    func hasDamagedType(_ number: UInt32) -> Bool {
        TypeRootChecks.of(handle)?.isDamaged(number) ?? false
    }

    /// Notes that type `number`'s databases failed their check in `txn`'s environment; true the first time,
    /// so that work over every type logs each damaged type once.
    static func noteDamagedType(_ number: UInt32, in txn: Transaction) -> Bool {
        TypeRootChecks.of(mdb_txn_env(txn.handle))?.markDamaged(number) ?? true
    }
}

/// The types whose databases' root pages an environment has checked (``Environment/checkTypeRoots(number:names:in:)``),
/// kept as the LMDB environment's user context so that any transaction can reach it.
final class TypeRootChecks: Sendable {
    private let checked = Mutex<Set<UInt32>>([])
    private let damaged = Mutex<Set<UInt32>>([])

    /// The checks of the LMDB environment `env` (its user context), nil once it is closing.
    static func of(_ env: OpaquePointer?) -> TypeRootChecks? {
        mdb_env_get_userctx(env).map { Unmanaged<TypeRootChecks>.fromOpaque($0).takeUnretainedValue() }
    }

    func isChecked(_ number: UInt32) -> Bool { checked.withLock { $0.contains(number) } }

    func markChecked(_ number: UInt32) { _ = checked.withLock { $0.insert(number) } }

    func isDamaged(_ number: UInt32) -> Bool { damaged.withLock { $0.contains(number) } }

    /// Notes a type whose check failed; true the first time.
    func markDamaged(_ number: UInt32) -> Bool { damaged.withLock { $0.insert(number).inserted } }
}

/// `close(2)`, by a name no method of ``Environment`` shadows.
private func closeDescriptor(_ descriptor: Int32) {
    close(descriptor)
}
