#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The permission bits of a store's files and folder.
///
/// New files get exactly the mode asked for (the process's umask cannot widen or narrow it: the files are
/// created, then `chmod`ed); the folder gets the same bits plus execute wherever read is granted (`0o600`
/// gives `0o700`, `0o660` gives `0o770`). Files that already exist keep their mode, so every opener of a
/// store, the CLI included, keeps the mode the store was made with.
enum StoreFileModes {
    /// The mode of the store's files for `filePermissions`: its read and write bits (a data file is not a program,
    /// so `0o777` gives files `0o666` and the folder `0o777`).
    static func fileMode(for filePermissions: Int) -> Int { filePermissions & 0o666 }

    /// The folder mode that goes with a file mode.
    static func folderMode(for fileMode: Int) -> Int {
        fileMode | ((fileMode & 0o444) >> 2)
    }

    /// Why `fileMode` cannot be a store's file mode, or nil when it can: only permission bits, and the
    /// owner must read and write.
    static func problem(with fileMode: Int) -> String? {
        guard fileMode >= 0 else { return "filePermissions \(fileMode) is negative; give permission bits (0o600)" }
        guard fileMode <= 0o777 else {
            return "filePermissions \(String(fileMode, radix: 8)) (octal) holds more than permission bits"
        }
        guard fileMode & 0o600 == 0o600 else {
            return "filePermissions \(String(fileMode, radix: 8)) (octal) does not let the owner read and write"
        }
        return nil
    }

    /// The permission bits of the file at `path`, or nil when it does not exist.
    static func mode(of path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_mode) & 0o777
    }

    /// Creates the folder `path` with `mode` when it does not exist (its parents with the default mode);
    /// an existing folder is left as it is. Returns an error message, or nil on success.
    static func makeFolder(_ path: String, mode: Int) -> String? {
        makeFolder(path, mode: mode, exact: true)
    }

    /// Creates `path` and its missing parents; `exact` sets `path`'s mode past the umask, parents get
    /// `0o777` less the umask, as `mkdir -p` gives them.
    private static func makeFolder(_ path: String, mode: Int, exact: Bool) -> String? {
        var info = stat()
        if stat(path, &info) == 0 { return nil }
        var parent = path
        while parent.hasSuffix("/"), parent.count > 1 { parent.removeLast() }
        if let slash = parent.lastIndex(of: "/"), slash > parent.startIndex {
            let upper = String(parent[..<slash])
            if stat(upper, &info) != 0, let problem = makeFolder(upper, mode: 0o777, exact: false) {
                return problem
            }
        }
        if mkdir(parent, mode_t(mode)) != 0 {
            if errno == EEXIST { return nil }
            return "cannot create \(parent): \(String(cString: strerror(errno)))"
        }
        if exact, chmod(parent, mode_t(mode)) != 0 {
            return "cannot set the mode of \(parent): \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// Sets `path`'s mode when it is not `mode` already; returns an error message, or nil.
    @discardableResult
    static func setMode(_ path: String, _ mode: Int) -> String? {
        guard let current = self.mode(of: path), current != mode else { return nil }
        if chmod(path, mode_t(mode)) != 0 {
            return "cannot set the mode of \(path): \(String(cString: strerror(errno)))"
        }
        return nil
    }
}
