import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's own "who has it open" lock: `flock(2)` on `compaction.lock` beside `data.mdb`.
///
/// Every process that opens the store holds it shared for as long as it has the environment open;
/// compaction at open takes it exclusively (without waiting), so it runs only when no other process of
/// the library has the store open, and nobody opens the store while the data file is swapped: an opener
/// waits for the shared lock until the compaction is over. Every opener tries the lock exclusively first: one
/// that gets it is the only process of the library with the store open, and writes its settings record in the
/// file (``write(record:)``) before it shares the lock; the openers after it read that record
/// (``record()``). The descriptor is close-on-exec, so child processes do not inherit the lock.
///
/// A process that cannot create the file (a read-only folder) takes the lock when the file exists and goes
/// without it otherwise; a process that compacts always creates the file first.
final class StoreOpenLock: Sendable {
    /// The name of the lock file in the store folder.
    static let fileName = "compaction.lock"

    /// The lock file's descriptor, -1 when there is none or it was released.
    private let file: Mutex<Int32>
    /// The lock file's path, and whether this lock created the file (``removeFileIfCreated()``).
    private let path: String
    private let createdFile: Bool

    /// Opens (creating, unless `readOnly`, with `fileMode`) the lock file of the store in `directory`. No
    /// lock is taken yet.
    init(directory: String, fileMode: Int, readOnly: Bool) {
        let path = Environment.file(Self.fileName, in: directory)
        var descriptor: Int32 = -1
        var created = false
        if !readOnly {
            descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(fileMode))
            created = descriptor >= 0
            if descriptor < 0 && errno == EEXIST { descriptor = open(path, O_RDWR | O_CLOEXEC) }
            // Created through the umask: give it the store's mode (an existing file of another owner keeps its own).
            if created { StoreFileModes.setMode(path, fileMode) }
        }
        if descriptor < 0 { descriptor = open(path, O_RDONLY | O_CLOEXEC) }
        file = Mutex(descriptor)
        self.path = path
        createdFile = created
    }

    /// Removes the lock file when this lock created it: the folder turned out to be another program's LMDB
    /// environment, which the library leaves as it found it (no process of the library has it open).
    func removeFileIfCreated() {
        guard createdFile else { return }
        // Nothing else of the library uses the file of a folder it refuses; one left behind is only a stray file.
        _ = unlink(path)
    }

    deinit { release() }

    /// Whether there is a lock file to lock.
    var isUsable: Bool { file.withLock { $0 } >= 0 }

    /// Takes the lock exclusively if no other open file holds it; returns whether it did.
    func tryExclusive() -> Bool {
        let descriptor = file.withLock { $0 }
        guard descriptor >= 0 else { return false }
        while true {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
            if errno != EINTR { return false }
        }
    }

    /// Takes the lock shared (or turns the exclusive lock into a shared one), waiting while another process
    /// compacts the store. Does nothing without a lock file.
    ///
    /// - Throws: ``LMDBError`` with the system's error when the lock cannot be taken.
    func share() throws {
        let descriptor = file.withLock { $0 }
        guard descriptor >= 0 else { return }
        while flock(descriptor, LOCK_SH) != 0 {
            let code = errno
            if code != EINTR { throw LMDBError(code: code, call: "flock", caller: "StoreOpenLock.share()") }
        }
    }

    /// The most bytes ``record`` keeps.
    static let recordCapacity = 4_096

    /// What the first of the processes that have the store open wrote in the file (``write(record:)``), read
    /// while this process holds the lock shared; nil without a file or anything in it.
    func record() -> [UInt8]? {
        let descriptor = file.withLock { $0 }
        guard descriptor >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Self.recordCapacity)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Array(bytes.prefix(count))
    }

    /// Replaces what the file holds with `record` (nothing for nil), while this process holds the lock
    /// exclusively: it is the first to open the store, and the processes that open it after read what it wrote.
    /// A failure to write leaves the file empty, which later openers take as nothing recorded.
    func write(record: [UInt8]?) {
        let descriptor = file.withLock { $0 }
        guard descriptor >= 0, ftruncate(descriptor, 0) == 0, let record, !record.isEmpty else { return }
        let written = record.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        if written != record.count { _ = ftruncate(descriptor, 0) }
    }

    /// Lets go of the lock and closes the file; later calls do nothing.
    func release(unlocking: Bool = true) {
        let descriptor = file.withLock { descriptor in
            defer { descriptor = -1 }
            return descriptor
        }
        guard descriptor >= 0 else { return }
        // Unlocked before it is closed: a child process spawned this moment holds a copy of the descriptor
        // until it execs, and closing ours alone would leave the lock held through that copy. Not in a child after
        // `fork()`: the lock is its parent's (`unlocking` false).
        if unlocking { flock(descriptor, LOCK_UN) }
        close(descriptor)
    }
}
