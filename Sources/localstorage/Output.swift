import Foundation
@_spi(Maintenance) import LocalStorageKit

/// Where commands write: results to standard output, messages to standard error, as text or JSON.
struct Output: Sendable {
    /// Whether `--json` was given.
    let isJSON: Bool

    /// Writes a line to standard output, with control and invisible format characters other than line
    /// breaks escaped (``InvisibleCharacters``), so that stored text cannot spoof the output.
    func line(_ text: String = "") {
        FileHandle.standardOutput.write(Data((InvisibleCharacters.escaped(text) + "\n").utf8))
    }

    /// Writes a line to standard error, escaped as ``line(_:)`` is.
    func message(_ text: String) {
        FileHandle.standardError.write(Data((InvisibleCharacters.escaped(text) + "\n").utf8))
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
