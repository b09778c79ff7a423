import CLMDB
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One open LMDB environment: the memory map, the read-transaction pool and the resize gate.
///
/// A process opens each store directory once (see ``EnvironmentRegistry``); every `LocalStorage`
/// on that directory shares this object. Only the writer thread calls ``write(_:)``.
final class Environment: @unchecked Sendable {
    // @unchecked: `handle` is immutable after init and LMDB's environment is thread-safe under
    // MDB_NOTLS; every mutable field below is behind a Mutex or the resize gate.

    /// The same limits in the library and the CLI, so either can open a store the other made.
    /// Each stored type uses 4 databases plus one per index it ever declared, and `meta` one in all.
    static let maxDatabases: UInt32 = 4096
    /// The databases every store has besides its types' (`meta`, `changes`, `counts`, `leases`, `access`,
    /// `access.of`, and `adaptive.queue`, `adaptive.of`, `adaptive.ghost`, `adaptive.ghost.of`,
    /// `adaptive.sketch.rows` for ``StorageEvictionPolicy/adaptive``, or `adaptive.sketch` in a store whose
    /// sketch predates rows).
    static let storeDatabases = 12
    /// How many types of 16 indexes fit in ``maxDatabases`` (the documented limit).
    static let typesOfSixteenIndexes = (Int(maxDatabases) - storeDatabases) / 20
    static let maxReaders: UInt32 = 512

    let handle: OpaquePointer
    let path: String
    let maxMapSize: Int
    /// Room past ``maxMapSize`` that only commits which leave the store no larger may use (see
    /// ``growMap(intoReserve:)``), so that a full store can always be emptied.
    let reserve: Int
    /// The bytes of the data file's used pages when the environment opened: past ``maxMapSize`` when the store
    /// grew under a larger limit, and then where the reserve starts (``hardMapLimit``).
    let usedBytesAtOpen: Int
    private let durabilityState: Mutex<StorageDurability>
    let gate = ResizeGate()
    /// Held by each write transaction and by ``readOpeningHandles(_:)`` (see ``HandleOpeningLock``).
    let handleOpening = HandleOpeningLock()
    let readPool = Mutex(ReadPool())
    let mapSize: Mutex<Int>
    let openedForkGeneration = ForkWatch.generation

    /// Whether opening found the data file of a store whose creation never finished (the disk filled up
    /// while LMDB wrote its first meta pages) and started it afresh.
    let recreatedUnfinishedDataFile: Bool
    /// What compaction at open did, when the open asked for it and had the store to itself.
    let compactionOutcome: CompactionOutcome?
    /// The store's own lock, held shared while the environment is open (see ``StoreOpenLock``).
    private let openLock: StoreOpenLock

    /// Removes the store's open-lock file when this environment's open created it (see
    /// ``StoreOpenLock/removeFileIfCreated()``): for a folder refused as another program's environment.
    func removeCreatedOpenLockFile() { openLock.removeFileIfCreated() }
    /// A descriptor of `lock.mdb`, closed only after the environment (-1 for none): the one a compaction kept, or
    /// one opened to ask who else holds LMDB's lock (``othersHaveItOpen()``). Closing any descriptor of the file
    /// drops every `fcntl` lock the process holds on it, LMDB's own included, so it lives as long as the
    /// environment.
    let heldLockFile: Int32
    /// What the process that opened the store first, of those that have it open, recorded of its settings
    /// (the `settingsRecord` of its open); nil when this open was the first, or nothing was recorded.
    let recordedByOthers: [UInt8]?

    /// Opens (creating if needed) the environment in `directory`.
    ///
    /// A `data.mdb` that LMDB rejects as invalid but that is shorter than its two meta pages, with nothing
    /// committed in them, is what an interrupted creation leaves (LMDB writes both meta pages at once when
    /// it creates a store, and any commit writes more pages after them): it holds no data and is emptied so
    /// that LMDB creates the store again. Any other invalid file is left alone and the open fails.
    ///
    /// `readOnly` opens it with `MDB_RDONLY`; `withoutLock` adds `MDB_NOLOCK`, for a read-only store whose
    /// lock file this process cannot write (nothing may write the store meanwhile). `fileMode` is the mode
    /// of files this open creates (see ``StoreFileModes``); a store that exists keeps the mode of its
    /// `data.mdb`.
    ///
    /// `settingsRecord` is what an open that finds no other process of the library on the store leaves in the
    /// store's lock file for the ones that open it after (``recordedByOthers``), which must agree with it.
    init(
        directory: String, mapSize: Int, maxMapSize: Int, durability: StorageDurability,
        readOnly: Bool = false, withoutLock: Bool = false, fileMode: Int = 0o600,
        compaction: CompactionRequest? = nil, settingsRecord: [UInt8]? = nil
    ) throws {
        let dataPath = Environment.file("data.mdb", in: directory)
        let fileMode = StoreFileModes.mode(of: dataPath) ?? fileMode
        let open = { () throws -> (handle: OpaquePointer, recreated: Bool) in
            do {
                let raw = try Environment.openHandle(
                    directory: directory, mapSize: mapSize, durability: durability,
                    readOnly: readOnly, withoutLock: withoutLock, fileMode: fileMode)
                return (raw, false)
            } catch let error as LMDBError where error.code == MDB_INVALID {
                guard !readOnly, Environment.emptyUnfinishedDataFile(directory: directory) else { throw error }
                let raw = try Environment.openHandle(
                    directory: directory, mapSize: mapSize, durability: durability,
                    readOnly: readOnly, withoutLock: withoutLock, fileMode: fileMode)
                return (raw, true)
            }
        }
        // Every opener holds the store's own lock shared; compaction needs it alone (Environment+Compaction).
        let openLock = StoreOpenLock(directory: directory, fileMode: fileMode, readOnly: readOnly)
        let raw: OpaquePointer
        // Alone: no other process of the library has the store open (each holds the lock shared).
        let isAlone = !readOnly && !withoutLock && openLock.tryExclusive()
        if isAlone { openLock.write(record: settingsRecord) }
        if let compaction, isAlone {
            recordedByOthers = nil
            let opened = try Environment.openCompacting(
                directory: directory, mapSize: mapSize, request: compaction, open: open)
            (raw, recreatedUnfinishedDataFile) = (opened.handle, opened.recreated)
            compactionOutcome = opened.outcome
            heldLockFile = opened.lockFile >= 0 ? opened.lockFile : Environment.openLockProbe(directory: directory)
            do {
                try openLock.share()
            } catch {
                mdb_env_close(raw)
                closeLockFile(heldLockFile)
                throw error
            }
        } else {
            try openLock.share()
            // Read once shared: a process opening first writes its record before it shares the lock.
            recordedByOthers = isAlone ? nil : openLock.record()
            // No compaction runs while we hold the lock shared: a copy still here was left by a killed one.
            if !readOnly { DataFileCompactor.removeLeftovers(directory: directory) }
            (raw, recreatedUnfinishedDataFile) = try open()
            // Asked to compact, but another holder has the store's open lock: say so rather than nothing.
            let isBusy = compaction != nil && !readOnly && !withoutLock && openLock.isUsable
            compactionOutcome = isBusy ? Environment.busyOutcome(raw, directory: directory) : nil
            heldLockFile = withoutLock ? -1 : Environment.openLockProbe(directory: directory)
        }
        self.openLock = openLock
        handle = raw
        path = directory
        self.maxMapSize = max(maxMapSize, mapSize)
        reserve = Environment.reserve(for: self.maxMapSize)
        durabilityState = Mutex(durability)
        var info = MDB_envinfo()
        mdb_env_info(raw, &info)
        self.mapSize = Mutex(info.me_mapsize)
        var stat = MDB_stat()
        usedBytesAtOpen = mdb_env_stat(raw, &stat) == MDB_SUCCESS ? (info.me_last_pgno + 1) * Int(stat.ms_psize) : 0
        // Released in `close()`, before the environment.
        mdb_env_set_userctx(raw, Unmanaged.passRetained(TypeRootChecks()).toOpaque())
    }

    /// Creates and opens an LMDB environment; closes it again on any failure.
    static func openHandle(
        directory: String, mapSize: Int, durability: StorageDurability,
        readOnly: Bool, withoutLock: Bool, fileMode: Int
    ) throws -> OpaquePointer {
        var raw: OpaquePointer?
        try check(mdb_env_create(&raw), "mdb_env_create")
        guard let raw else { throw LMDBError(code: ENOMEM, call: "mdb_env_create", caller: #function) }
        do {
            try check(mdb_env_set_maxdbs(raw, Environment.maxDatabases), "mdb_env_set_maxdbs")
            try check(mdb_env_set_maxreaders(raw, Environment.maxReaders), "mdb_env_set_maxreaders")
            try check(mdb_env_set_mapsize(raw, Environment.rounded(mapSize)), "mdb_env_set_mapsize")
            var flags = UInt32(MDB_NOTLS)
            switch durability {
            case .full: break
            case .relaxed: flags |= UInt32(MDB_NOMETASYNC)
            case .none: flags |= UInt32(MDB_NOSYNC)
            }
            if readOnly { flags |= UInt32(MDB_RDONLY) }
            if withoutLock { flags |= UInt32(MDB_NOLOCK) }
            try Environment.checkMetaPageSize(directory: directory)
            if !withoutLock {
                try check(Environment.reserveLockFile(directory: directory, fileMode: fileMode), "mdb_env_open")
            }
            let code = directory.withCString { mdb_env_open(raw, $0, flags, mode_t(fileMode)) }
            try check(Environment.diskFullOr(code, path: directory), "mdb_env_open")
            if !readOnly {
                // LMDB creates the files through the umask: give them exactly the store's mode. A file of
                // another owner (a group's store) cannot be changed and needs no change: that is not an error.
                for name in ["data.mdb", "lock.mdb"] {
                    StoreFileModes.setMode(
                        Environment.file(name, in: directory), fileMode)
                }
            }
            // Slots of dead processes are freed first: the page check takes one, and a table full of them
            // would refuse every open.
            var dead: Int32 = 0
            try check(mdb_reader_check(raw, &dead), "mdb_reader_check")
            try Environment.checkPages(raw)
        } catch {
            mdb_env_close(raw)
            throw error
        }
        return raw
    }

    /// `code`, or `ENOSPC` when it is an `EIO` and the file system holding `path` is (nearly) full: LMDB
    /// reports a short write, which is what a full disk gives, as `EIO`.
    static func diskFullOr(_ code: Int32, path: String) -> Int32 {
        guard code == EIO else { return code }
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return code }
        return isNearlyFull(info) ? ENOSPC : code
    }

    /// ``diskFullOr(_:path:)`` for the open environment, through its data file's descriptor (the path of an
    /// in-memory store is gone once it is open).
    private func diskFullOr(_ code: Int32) -> Int32 {
        guard code == EIO else { return code }
        var fd: Int32 = -1
        var info = statvfs()
        guard mdb_env_get_fd(handle, &fd) == MDB_SUCCESS, fstatvfs(fd, &info) == 0 else { return code }
        return Environment.isNearlyFull(info) ? ENOSPC : code
    }

    /// Runs `body` in `txn`, a transaction just begun, then commits it (a commit that met a full disk fails
    /// with `ENOSPC`); aborts it when `body` throws.
    func commit<R>(_ txn: OpaquePointer, readOnly: Bool, running body: (Transaction) throws -> R) throws -> R {
        let value: R
        do {
            value = try body(Transaction(handle: txn, isReadOnly: readOnly))
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try check(diskFullOr(mdb_txn_commit(txn)), "mdb_txn_commit")
        return value
    }

    private static func isNearlyFull(_ info: statvfs) -> Bool {
        UInt64(info.f_bavail) * UInt64(info.f_frsize) < 1 << 20
    }

    let isClosed = Mutex(false)

    /// How durable each commit is now.
    var durability: StorageDurability { durabilityState.withLock { $0 } }

    /// Changes how durable later commits are (`mdb_env_set_flags`; LMDB allows it on an open environment).
    func setDurability(_ durability: StorageDurability) throws {
        try durabilityState.withLock { current in
            let sync = UInt32(MDB_NOSYNC | MDB_NOMETASYNC)
            try check(mdb_env_set_flags(handle, sync, 0), "mdb_env_set_flags")
            switch durability {
            case .full: break
            case .relaxed: try check(mdb_env_set_flags(handle, UInt32(MDB_NOMETASYNC), 1), "mdb_env_set_flags")
            case .none: try check(mdb_env_set_flags(handle, UInt32(MDB_NOSYNC), 1), "mdb_env_set_flags")
            }
            current = durability
        }
    }

    deinit { close() }

    /// Closes the environment; later calls do nothing. No transaction may be open.
    func close() {
        let wasClosed = isClosed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else { return }
        // In a child after `fork()` the pooled read transactions hold the parent's reader slots, and the open lock's
        // descriptor shares the parent's lock: neither is given up here (aborting cleared the parent's slots, and
        // unlocking dropped the parent's shared lock).
        let forked = ForkWatch.generation != openedForkGeneration
        for txn in readPool.withLock({ $0.removeAll() }) where !forked { mdb_txn_abort(txn.handle) }
        if let checks = mdb_env_get_userctx(handle) {
            mdb_env_set_userctx(handle, nil)
            Unmanaged<TypeRootChecks>.fromOpaque(checks).release()
        }
        mdb_env_close(handle)
        closeLockFile(heldLockFile)
        openLock.release(unlocking: !forked)
    }

    /// Whether the environment was opened read-only (`MDB_RDONLY`).
    var isReadOnly: Bool {
        var flags: UInt32 = 0
        return mdb_env_get_flags(handle, &flags) == MDB_SUCCESS && flags & UInt32(MDB_RDONLY) != 0
    }

    /// The current size of the memory map in bytes.
    var currentMapSize: Int { mapSize.withLock { $0 } }

    /// The id of the last committed transaction of any process (`mdb_env_info`).
    var lastTransactionID: Int { rawInfo.me_last_txnid }

    /// Environment information: map size, last page, readers.
    func info() -> EnvironmentInfo { EnvironmentInfo(rawInfo) }

    /// Gives back this process's handle of `database` (`mdb_dbi_close`), committed and used by nothing any more: a
    /// test standing in for another process's databases, which take no handles of this one's.
    func closeDatabaseForTests(_ database: Database) { mdb_dbi_close(handle, database.handle) }

    /// `mdb_env_info`, which reads the meta pages in the map: under the gate, so that no resize of this process
    /// unmaps them meanwhile (a thread already inside a transaction holds it).
    private var rawInfo: MDB_envinfo {
        var info = MDB_envinfo()
        if ResizeGate.isHeldByThisThread {
            mdb_env_info(handle, &info)
        } else {
            gate.withSharedLeaf { _ = mdb_env_info(handle, &info) }
        }
        return info
    }

    /// Clears reader slots left behind by dead processes; returns how many were cleared.
    @discardableResult
    func clearStaleReaders() -> Int {
        var dead: Int32 = 0
        mdb_reader_check(handle, &dead)
        return Int(dead)
    }

    /// Throws when this object is used in a child after `fork()`, which LMDB forbids.
    func checkProcess() throws {
        if ForkWatch.generation != openedForkGeneration {
            throw LMDBError(code: EPERM, call: "fork", caller: "Environment used after fork()")
        }
    }

    private enum TransactionOutcome<R> {
        case done(R)
        case resized
    }

    // MARK: - Writes (writer thread only)

    /// Runs `body` in a write transaction and commits it; aborts when `body` throws.
    ///
    /// Only the writer thread calls this, so LMDB's write lock is never contended in-process. Without
    /// `reserve` the transaction may not extend the data file past ``maxMapSize`` (or past its last page,
    /// if a commit already grew it into the reserve). The transaction holds ``HandleOpeningLock`` from begin
    /// to end, as it may open new database handles.
    func write<R>(reserve: Bool = false, _ body: (Transaction) throws -> R) throws -> R {
        try checkProcess()
        while true {
            if !reserve { try keepWithinMaxMapSize() }
            let outcome: TransactionOutcome<R> = try handleOpening.withLock {
                try gate.withShared {
                    var raw: OpaquePointer?
                    let code = mdb_txn_begin(handle, nil, 0, &raw)
                    if code == MDB_MAP_RESIZED { return .resized }
                    try check(code, "mdb_txn_begin")
                    guard let txn = raw else { throw LMDBError(code: EINVAL, call: "mdb_txn_begin", caller: #function) }
                    return .done(try commit(txn, readOnly: false, running: body))
                }
            }
            switch outcome {
            case .done(let value): return value
            case .resized: try adoptMapSize()
            }
        }
    }
}
