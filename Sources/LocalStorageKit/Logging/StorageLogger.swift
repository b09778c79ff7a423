import Foundation

/// How important a log message is.
///
/// From the least to the most severe: `trace`, `debug`, `info`, `notice`, `warning`, `error`, `critical`.
/// Levels compare by severity, so `level >= .warning` selects warnings and worse.
public enum StorageLogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// A level of severity; the cases run from the least severe (`trace`) to the most (`critical`).
    case trace, debug, info, notice, warning, error, critical

    /// Whether `lhs` is less severe than `rhs`.
    public static func < (lhs: StorageLogLevel, rhs: StorageLogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        case .critical: "critical"
        }
    }
}

/// Receives what a ``LocalStorage`` does: messages and the duration of every public operation.
///
/// ```swift
/// struct PrintLogger: StorageLogger {
///     func log(level: StorageLogLevel, message: String, metadata: [String: String]?) { print(message) }
///     func record(duration: TimeInterval, operation: String) {}
/// }
/// ```
public protocol StorageLogger: Sendable {
    /// Called with a message; `metadata` adds detail such as the type or the record count.
    func log(level: StorageLogLevel, message: String, metadata: [String: String]?)
    /// Called after every public operation with how long it took, in seconds.
    func record(duration: TimeInterval, operation: String)
}

/// A logger that prints to standard error.
public struct ConsoleStorageLogger: StorageLogger {
    /// Messages below this level are dropped.
    public var minimumLevel: StorageLogLevel
    /// Prints operation durations too (at `trace`).
    public var recordsDurations: Bool

    /// A logger printing messages at `minimumLevel` and above to standard error.
    public init(minimumLevel: StorageLogLevel = .info, recordsDurations: Bool = false) {
        self.minimumLevel = minimumLevel
        self.recordsDurations = recordsDurations
    }

    /// Prints `[LocalStorage] level: message key=value …` to standard error when `level` is at least
    /// ``minimumLevel``; metadata keys are sorted.
    public func log(level: StorageLogLevel, message: String, metadata: [String: String]?) {
        guard level >= minimumLevel else { return }
        var line = "[LocalStorage] \(level): \(message)"
        if let metadata, !metadata.isEmpty {
            line += " " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Prints the operation's duration in microseconds at `trace`, when ``recordsDurations`` is on and
    /// ``minimumLevel`` is `trace`; otherwise does nothing.
    public func record(duration: TimeInterval, operation: String) {
        guard recordsDurations, minimumLevel <= .trace else { return }
        let micros = (duration * 1e6).rounded()
        FileHandle.standardError.write(Data("[LocalStorage] trace: \(operation) took \(micros) µs\n".utf8))
    }
}

#if canImport(os)
import os

/// A logger that writes to Apple's unified logging system.
public struct OSLogStorageLogger: StorageLogger {
    private let logger: os.Logger

    /// A logger for `subsystem` and `category`.
    public init(subsystem: String = "LocalStorageKit", category: String = "LocalStorage") {
        logger = os.Logger(subsystem: subsystem, category: category)
    }

    /// Writes the message at the matching `os.Logger` level (`trace` and `debug` as debug), marked public.
    public func log(level: StorageLogLevel, message: String, metadata: [String: String]?) {
        let text = metadata.map { "\(message) \($0)" } ?? message
        switch level {
        case .trace, .debug: logger.debug("\(text, privacy: .public)")
        case .info: logger.info("\(text, privacy: .public)")
        case .notice: logger.notice("\(text, privacy: .public)")
        case .warning: logger.warning("\(text, privacy: .public)")
        case .error: logger.error("\(text, privacy: .public)")
        case .critical: logger.critical("\(text, privacy: .public)")
        }
    }

    /// Writes the operation's duration in microseconds at debug level.
    public func record(duration: TimeInterval, operation: String) {
        logger.debug("\(operation, privacy: .public) took \(duration * 1e6) µs")
    }
}
#endif
