import Foundation
@_spi(Maintenance) import LocalStorageKit

/// `export [TYPE…] [--output FILE]`: types and records as JSON Lines.
enum ExportCommand: Command {
    static let name = "export"
    static let synopsis = "export [TYPE…] [--output FILE]"
    static let summary = "Writes types and records as JSON Lines (to standard output by default)."
    static let details = """
        Arguments:
          TYPE…          the types to export (default: all)
          --output FILE  write to FILE instead of standard output (- is standard output); the summary
                         then goes to standard output, unless FILE is a stream such as /dev/stdout
        Each type starts with a line describing it (type, version, signature, indexes), then one line
        per record: type, id, createdAt, updatedAt, expiresAt (ns since 1970), version, format,
        signature, indexes and payload (JSON). A payload holding NaN or ±Infinity shows them as the
        strings "NaN", "Infinity" and "-Infinity". When the JSON would not restore the stored bytes
        exactly (those, or a float holding a whole number, which JSON writes as an integer), the line
        also carries binaryPayload (the stored bytes in Base64), from which import restores them. Each type is exported once,
        however often it is named. Unreadable records are left out and reported on standard error,
        and the exit status is 1.
        The export holds PLAINTEXT JSON, also from an encrypted store (opened with --key-file): keep it
        as safe as the key. An import into an encrypted store seals every record it writes.
        """
    static let spec = ArgumentSpec(options: ["output"], positionals: 0...Int.max)
    static let onlyReads = true

    static func run(_ arguments: ParsedArguments, store: StoreMaintenance, output: Output) async throws -> Int32 {
        // `-` is standard output, as it is standard input for `import` (a file of that name is `./-`).
        let toFile = arguments.value("output").flatMap { $0 == "-" ? nil : $0 }
        if let toFile, toFile.isEmpty { throw UsageError("--output needs a file") }
        let file = try toFile.map { try OutputFile($0, mode: storeFileMode(store)) }
        let handle = file?.handle ?? FileHandle.standardOutput
        let progress = ProgressDisplay()
        let report: ExportReport
        do {
            report = try store.export(
                types: arguments.positionals.map { TypeArgument.name($0, in: store) },
                to: { lines in
                    let bytes = escapingInvisibleCharacters(lines)
                    guard file == nil else { return try handle.write(contentsOf: bytes) }
                    // Standard output: a failed write says why, as every command's output does.
                    if let failure = Output.emit(bytes: Array(bytes), to: STDOUT_FILENO) {
                        throw ExportOutputError(code: failure)
                    }
                },
                progress: progress.handler)
            progress.finish()
            try file?.commit()
        } catch {
            file?.discard()
            throw error
        }
        // The records may be on standard output (or another stream, `--output /dev/stdout`): the report then goes to
        // standard error. A regular FILE written in place (its folder takes no file beside it) is a file all the same.
        let reportsToStandardError = file?.isStream ?? true
        if output.isJSON {
            try output.json(report, toStandardError: reportsToStandardError)
        } else {
            for problem in report.skipped {
                output.message("localstorage: skipped " + InvisibleCharacters.escaped("\(problem)", keeping: []))
            }
            let records = report.skipped.filter { $0.id != nil }.count
            let types = report.skipped.count - records
            let skipped = [
                (records, "unreadable record", "unreadable records"),
                (types, "type whose description cannot be read", "types whose descriptions cannot be read"),
            ].filter { $0.0 > 0 }.map { "\($0.0) \($0.0 == 1 ? $0.1 : $0.2)" }
            let summary =
                "Exported \(report.records) records of \(report.types) types"
                + (skipped.isEmpty ? "." : "; skipped \(skipped.joined(separator: " and ")).")
            if reportsToStandardError { output.message(summary) } else { output.line(summary) }
        }
        return report.skipped.isEmpty ? 0 : 1
    }

    /// The permission bits of the store's data file (an export holds its records in plaintext: it gets the
    /// store's privacy) with the owner's read and write, 0o600 when they cannot be read.
    static func storeFileMode(_ store: StoreMaintenance) -> mode_t {
        var info = stat()
        guard stat(store.directory.appendingPathComponent("data.mdb").path, &info) == 0 else { return 0o600 }
        return info.st_mode & 0o666 | 0o600  // Its owner can always write it again (a read-only store's is 0400).
    }

    /// The file `--output` names, written beside it and moved over it only once the export is whole, so that
    /// a failed export leaves an existing file as it was (and no empty one); through a symbolic link, the file it
    /// leads to. A path that is not a regular file (`/dev/stdout`, a pipe), or one whose folder has no room for a
    /// file beside it, is written directly.
    struct OutputFile {
        let path: String
        let handle: FileHandle
        /// The file written, when it is not `path` itself.
        let partial: String?
        /// Whether `path` is a stream or device (`/dev/stdout`, a pipe), not a regular file.
        let isStream: Bool

        init(_ named: String, mode: mode_t) throws {
            // A symbolic link to a regular file stays: the file it names is written as FILE is (beside it, its
            // mode exactly `mode`, moved over it once whole). Through the link, the plaintext export took the
            // target's own mode (0o644) and emptied it before the export was whole.
            let path = OutputFile.regularTarget(of: named) ?? named
            var info = stat()
            // Anything that is not a regular file (a device, a pipe, a link to one) is written through.
            let special = lstat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG
            var partial = special ? nil : path + ".partial-\(UUID().uuidString)"
            var descriptor: Int32 = -1
            if let name = partial {
                descriptor = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
                if descriptor >= 0 {
                    fchmod(descriptor, mode)  // Exactly `mode`, whatever the umask.
                } else if errno == EACCES || errno == EPERM {
                    partial = nil  // A folder this user cannot write, beside a FILE it can: FILE itself, then.
                } else {
                    // A full disk or quota: writing FILE instead would empty the earlier export first.
                    throw MaintenanceError.invalidArgument(
                        "cannot write beside \(path): \(String(cString: strerror(errno)))")
                }
            }
            if descriptor < 0 {
                descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, mode)
                // An existing FILE written in place gets `mode` too: it kept its own (say 0o644), and an export
                // of an encrypted store is its plaintext. It is emptied only then: a FILE whose mode cannot be
                // set (another user's) is left as it was.
                if descriptor >= 0 && !special && fchmod(descriptor, mode) != 0 {
                    let problem = String(cString: strerror(errno))
                    close(descriptor)
                    throw MaintenanceError.invalidArgument(
                        "cannot give \(path) the mode \(String(mode, radix: 8)) before writing to it (it was left "
                            + "as it was): \(problem)")
                }
                if descriptor >= 0 && ftruncate(descriptor, 0) != 0 && !special {
                    let problem = String(cString: strerror(errno))
                    close(descriptor)
                    throw MaintenanceError.invalidArgument("cannot empty \(path) to write to it: \(problem)")
                }
            }
            guard descriptor >= 0 else {
                throw MaintenanceError.invalidArgument("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            self.path = path
            handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            self.partial = partial
            isStream = special
        }

        /// The regular file the symbolic link at `path` leads to, or nil when `path` is not a link or leads elsewhere.
        /// The links the system keeps for streams (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`) stay streams: an
        /// export to `/dev/stdout` redirected into a file is written through, as the shell opened it.
        static func regularTarget(of path: String) -> String? {
            guard !path.hasPrefix("/dev/"), !path.hasPrefix("/proc/") else { return nil }
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK, let resolved = realpath(path, nil)
            else { return nil }
            defer { free(resolved) }
            let target = String(cString: resolved)
            guard stat(target, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
            return target
        }

        /// Writes the file to disk, closes it and moves it over `path`.
        func commit() throws {
            try handle.synchronize()  // Its bytes before its name: a crash leaves the earlier FILE or this one.
            try handle.close()
            guard let partial else { return }
            guard rename(partial, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(partial)
                throw MaintenanceError.invalidArgument("cannot write \(path): \(reason)")
            }
        }

        /// Removes what was written of the file (its descriptor closes with the handle).
        func discard() {
            if let partial { unlink(partial) }
        }
    }

    /// A chunk of the export (whole JSON lines) with each invisible character written as a JSON escape
    /// (``InvisibleCharacters``), as every other command writes them: the same JSON to a parser (an import
    /// restores the same text), but nothing that can spoof a terminal or a review. Such a character can only
    /// stand inside a JSON string, except the whitespace JSON allows between tokens (tab, line feed, carriage
    /// return), which a stored JSON payload may hold there and which is kept as it is.
    static func escapingInvisibleCharacters(_ chunk: Data) -> Data {
        guard let text = String(validating: chunk, as: UTF8.self), InvisibleCharacters.occur(in: text) else {
            return chunk
        }
        return Data(InvisibleCharacters.escaped(text, keeping: ["\n", "\t", "\r"]).utf8)
    }
}

/// Standard output refused the export's lines.
struct ExportOutputError: Error, CustomStringConvertible {
    let code: Int32
    var description: String { "cannot write the output: \(String(cString: strerror(code)))" }
}
