import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a compaction at open did (see ``DataFileCompactor``).
enum CompactionOutcome: Sendable, Equatable {
    /// The free fraction did not exceed the threshold.
    case notNeeded(freeFraction: Double)
    /// Another process has the store open (the reason says how that was seen).
    case skipped(freeFraction: Double, reason: String)
    /// The store's own entries forbid it (``Environment/CompactionRequest/entryChecks``: a layout this version
    /// does not read, a key check the open's keys fail); the store is as it was.
    case refused(freeFraction: Double, reason: String)
    /// The copy or the swap failed; the store is as it was.
    case failed(freeFraction: Double, reason: String)
    /// The data file was replaced by its compacted copy.
    case compacted(freeFraction: Double, bytesBefore: Int, bytesAfter: Int)
}

/// Replaces a store's data file by a copy without its free pages and with its trees packed full, safely against other processes and
/// against a kill at any moment.
///
/// The caller holds the store's ``StoreOpenLock`` exclusively and has no environment open on the folder.
/// ``compact(directory:mapSize:step:)`` then:
/// 1. takes LMDB's own lock exclusively (`fcntl` write lock on byte 0 of `lock.mdb`, without waiting: every
///    process with the environment open holds it shared, so this fails when any has) and keeps it until the
///    caller has reopened the store, so no LMDB process can open the store in between;
/// 2. opens the data file read-only and without the lock file, and copies it into `data.mdb.compacting` beside
///    it, created with the data file's mode and owner, every tree packed full (``RepackingCopy``: LMDB's own
///    compacting copy leaves out free pages but keeps the nearly empty ones that deletes leave);
/// 3. `fsync`s the copy, `rename`s it over `data.mdb` (atomic: the name holds the old file or the complete
///    new one, each holding every committed record) and `fsync`s the folder.
///
/// A kill before the rename leaves the old file and a stray copy, which the next open removes
/// (``removeLeftovers(directory:)``, under the store's lock, so never while a compaction runs).
enum DataFileCompactor {
    /// The name of the copy being written, in the store folder.
    static let temporaryName = "data.mdb.compacting"

    /// What ``compact(directory:mapSize:step:)`` leaves the caller: the outcome, and the descriptor of the
    /// lock file holding LMDB's exclusive lock (-1 when it does not). The caller opens the store while it
    /// holds that lock (LMDB then sets up the lock file afresh for the new data file), and closes the
    /// descriptor only after closing the environment: closing any descriptor of `lock.mdb` drops every
    /// `fcntl` lock this process holds on it, LMDB's own included.
    struct Result {
        var outcome: CompactionOutcome
        var lockFile: Int32
    }

    /// Removes a copy a killed compaction left in `directory`. Call only under the store's lock.
    static func removeLeftovers(directory: String) {
        // Nothing else reads the stray copy; a copy that cannot be removed is tried again at the next open.
        _ = unlink(path(directory, temporaryName))
    }

    /// Copies the store in `directory` compacted and swaps the copy in (see the type's documentation).
    ///
    /// `step` is told each stage as it completes (`locked`, `created`, `copied`, `synced`, `renamed`,
    /// `folder synced`). Never throws: whatever fails leaves the data file as it was and says why.
    static func compact(
        directory: String, freeFraction: Double, mapSize: Int, step: (String) -> Void
    ) -> Result {
        let dataPath = path(directory, "data.mdb")
        let lockFile = open(path(directory, "lock.mdb"), O_RDWR | O_CLOEXEC)
        guard lockFile >= 0 else {
            return Result(
                outcome: .failed(freeFraction: freeFraction, reason: "cannot open lock.mdb: \(systemError())"),
                lockFile: -1)
        }
        if let who = LMDBLockFile.takeWriteLock(lockFile) {
            close(lockFile)
            return Result(
                outcome: .skipped(freeFraction: freeFraction, reason: "\(who) has the store open (LMDB's lock)"),
                lockFile: -1)
        }
        step("locked")
        switch copyAndSwap(directory: directory, dataPath: dataPath, mapSize: mapSize, step: step) {
        case .success(let sizes):
            return Result(
                outcome: .compacted(freeFraction: freeFraction, bytesBefore: sizes.before, bytesAfter: sizes.after),
                lockFile: lockFile)
        case .failure(let problem):
            removeLeftovers(directory: directory)
            return Result(outcome: .failed(freeFraction: freeFraction, reason: problem.reason), lockFile: lockFile)
        }
    }

    private struct Problem: Error {
        let reason: String
    }

    /// Steps 2 and 3 of the type's documentation; returns the data file's sizes before and after.
    private static func copyAndSwap(
        directory: String, dataPath: String, mapSize: Int, step: (String) -> Void
    ) -> Swift.Result<(before: Int, after: Int), Problem> {
        var original = stat()
        guard stat(dataPath, &original) == 0 else { return .failure(Problem(reason: "data.mdb: \(systemError())")) }
        let mode = Int(original.st_mode) & 0o777
        let environment: OpaquePointer
        do {
            environment = try Environment.openHandle(
                directory: directory, mapSize: max(mapSize, Int(original.st_size)), durability: .none,
                readOnly: true, withoutLock: true, fileMode: mode)
        } catch {
            return .failure(Problem(reason: "cannot open the store to copy it: \(error)"))
        }
        var environmentOpen = true
        defer { if environmentOpen { mdb_env_close(environment) } }
        let temporary = path(directory, temporaryName)
        removeLeftovers(directory: directory)
        let copy = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode))
        guard copy >= 0 else { return .failure(Problem(reason: "cannot create \(temporaryName): \(systemError())")) }
        var copyOpen = true
        defer { if copyOpen { close(copy) } }
        // Exactly the store's mode, past the umask, and its owner when that is not us (a group's store).
        guard fchmod(copy, mode_t(mode)) == 0 else {
            return .failure(Problem(reason: "cannot set the copy's mode: \(systemError())"))
        }
        var created = stat()
        guard fstat(copy, &created) == 0 else {
            return .failure(Problem(reason: "cannot stat the copy: \(systemError())"))
        }
        if created.st_uid != original.st_uid || created.st_gid != original.st_gid,
            fchown(copy, original.st_uid, original.st_gid) != 0
        {
            return .failure(Problem(reason: "cannot give the copy the store's owner: \(systemError())"))
        }
        step("created")
        do {
            // The copy is never larger than the pages in use, plus a few a commit leaves free.
            try RepackingCopy.copy(
                from: environment, toFile: temporary, mapSize: Int(original.st_size) + RepackingCopy.slack,
                fileMode: mode)
        } catch {
            return .failure(Problem(reason: "cannot copy the store: \(error)"))
        }
        step("copied")
        guard fsync(copy) == 0 else { return .failure(Problem(reason: "cannot fsync the copy: \(systemError())")) }
        copyOpen = false
        guard close(copy) == 0 else { return .failure(Problem(reason: "cannot close the copy: \(systemError())")) }
        step("synced")
        environmentOpen = false
        mdb_env_close(environment)
        guard rename(temporary, dataPath) == 0 else {
            return .failure(Problem(reason: "cannot rename the copy over data.mdb: \(systemError())"))
        }
        step("renamed")
        LMDBLockFile.syncFolder(directory)
        step("folder synced")
        var after = stat()
        let afterBytes = stat(dataPath, &after) == 0 ? Int(after.st_size) : 0
        return .success((Int(original.st_size), afterBytes))
    }

    private static func path(_ directory: String, _ name: String) -> String {
        Environment.file(name, in: directory)
    }

    private static func systemError() -> String { String(cString: strerror(errno)) }
}
