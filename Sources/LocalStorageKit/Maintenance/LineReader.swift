import Foundation

/// Reads a file line by line in large chunks, holding one line (and at most a chunk more) in memory.
struct LineReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where the search for the next line break goes on: the bytes from `start` up to here have none.
    private var searched = 0
    private var isAtEnd = false
    /// Bytes handed out so far, line breaks included.
    private(set) var bytesRead = 0
    /// How many bytes a read asks for.
    private let chunkSize: Int

    /// Opens `url` for reading, `chunkSize` bytes at a time.
    init(url: URL, chunkSize: Int = 1 << 20) throws {
        self.chunkSize = max(1, chunkSize)
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            throw MaintenanceError.invalidArgument("cannot read \(url.path): \(error.localizedDescription)")
        }
    }

    /// The next line without its line break (a trailing `\r` removed too), or nil at the end of the file.
    mutating func nextLine() throws -> ArraySlice<UInt8>? {
        while true {
            if let newline = buffer[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                var line = buffer[start..<newline]
                bytesRead += newline + 1 - start
                start = newline + 1
                searched = start
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                return line
            }
            if isAtEnd {
                guard start < buffer.count else { return nil }
                let line = buffer[start...]
                bytesRead += buffer.count - start
                start = buffer.count
                return line
            }
            // A long line is searched once, not again from its start with every chunk read.
            buffer.removeFirst(start)
            start = 0
            searched = buffer.count
            let chunk = try handle.read(upToCount: chunkSize) ?? Data()
            if chunk.isEmpty { isAtEnd = true } else { buffer.append(contentsOf: chunk) }
        }
    }

    /// Closes the file.
    func close() {
        // Closing a file opened for reading, after reading it, cannot lose anything: what failed to read threw.
        try? handle.close()
    }
}
