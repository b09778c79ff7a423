import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The input of an import as a regular file, which can be read twice (a check pass, then a write pass).
///
/// A regular file is used as it is. Anything else (a pipe, standard input, a FIFO) gives its bytes only once,
/// so they are copied into a temporary file first, read exactly once. Standard input is always copied, even
/// when it is a regular file: reopening `/dev/stdin` by path reads from the file's start with this process's
/// permissions (and on Apple platforms shares the offset, so the second pass read nothing). The copy is
/// readable by its owner alone: an export holds every payload in plain text.
struct ImportSpool {
    /// The file to read.
    let file: URL
    /// Its size in bytes, when known (for progress).
    let size: Int?
    /// Whether ``file`` is a temporary copy to remove afterwards.
    private let isTemporary: Bool

    /// The input at `url`; `-` means standard input, and so does a path that names it (`/dev/stdin`, `/dev/fd/0`).
    init(_ url: URL) throws {
        let isStandardInput =
            (url.lastPathComponent == "-" && !FileManager.default.fileExists(atPath: url.path))
            || ImportSpool.namesStandardInput(url.path)
        let source = isStandardInput ? URL(fileURLWithPath: "/dev/stdin") : url
        var info = stat()
        if !isStandardInput, stat(source.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            file = source
            size = Int(info.st_size)
            isTemporary = false
            return
        }
        let copy = FileManager.default.temporaryDirectory
            .appendingPathComponent("localstorage-import-\(UUID().uuidString).jsonl")
        do {
            let descriptor = open(copy.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            let output = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            let input =
                isStandardInput ? FileHandle.standardInput : try FileHandle(forReadingFrom: source)
            var total = 0
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                try output.write(contentsOf: chunk)
                total += chunk.count
            }
            try output.close()
            size = total
        } catch {
            let reason = "cannot read \(url.path): \(error.localizedDescription)"
            do {
                if FileManager.default.fileExists(atPath: copy.path) { try FileManager.default.removeItem(at: copy) }
            } catch let cleanup {
                throw MaintenanceError.invalidArgument(reason + " (and \(copy.path) remains: \(cleanup))")
            }
            throw MaintenanceError.invalidArgument(reason)
        }
        file = copy
        isTemporary = true
    }

    /// Whether `path` names this process's standard input (`/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/0`): read by
    /// name, a regular file on standard input would be read from its start, not where the caller left it.
    static func namesStandardInput(_ path: String) -> Bool {
        ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"].contains(path)
    }

    /// Removes the temporary copy, if there is one.
    func remove() throws {
        guard isTemporary else { return }
        try FileManager.default.removeItem(at: file)
    }
}
