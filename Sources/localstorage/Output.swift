import Foundation
@_spi(Maintenance) import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where commands write: results to standard output, messages to standard error, as text or JSON.
struct Output: Sendable {
    /// Whether `--json` was given.
    let isJSON: Bool

    /// Writes a line to standard output, with control and invisible format characters other than line
    /// breaks escaped (``InvisibleCharacters``), so that stored text cannot spoof the output.
    func line(_ text: String = "") {
        Output.writeOrExit(InvisibleCharacters.escaped(text) + "\n")
    }

    /// Writes a line to standard error, escaped as ``line(_:)`` is.
    func message(_ text: String) {
        Output.emit(InvisibleCharacters.escaped(text) + "\n", to: STDERR_FILENO)
    }

    /// Writes `text` to standard output; when it cannot be written (a full disk, a closed pipe with SIGPIPE
    /// ignored), says so on standard error and exits with status 1. (`FileHandle.write(_:)` ends the process on
    /// a failed write: it forces the throwing write inside Foundation.)
    static func writeOrExit(_ text: String) {
        let failure = emit(text, to: STDOUT_FILENO)
        guard let failure else { return }
        emit("localstorage: error: cannot write the output: \(String(cString: strerror(failure)))\n", to: STDERR_FILENO)
        exit(1)
    }

    /// Writes `text` to the file descriptor `descriptor` whole; returns the `errno` of a failed write, or nil.
    @discardableResult
    static func emit(_ text: String, to descriptor: Int32) -> Int32? {
        emit(bytes: Array(text.utf8), to: descriptor)
    }

    /// Writes `bytes` to the file descriptor `descriptor` whole; returns the `errno` of a failed write, or nil.
    @discardableResult
    static func emit(bytes: [UInt8], to descriptor: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }

    /// Writes `value` as pretty JSON to standard output (or standard error with `toStandardError`).
    func json<T: Encodable>(_ value: T, toStandardError: Bool = false) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(value), as: UTF8.self)
        if toStandardError { message(text) } else { line(text) }
    }

    /// Writes `value` as JSON with `--json`, otherwise `text`, to standard output.
    func result<T: Encodable>(_ value: T, text: String) throws {
        if isJSON { try json(value) } else { line(text) }
    }

    /// A timestamp (ns since 1970) as ISO 8601 with milliseconds, in UTC.
    static func date(_ nanoseconds: Int64) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true)
            .format(Date(timeIntervalSince1970: Double(nanoseconds) / 1e9))
    }

    /// A byte count for people: `512 B`, `12.3 KiB`, `4.0 MiB`.
    static func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f", value) + " " + units[unit]
    }
}
