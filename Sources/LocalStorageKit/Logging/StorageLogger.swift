import Foundation

/// How important a log message is.
public enum StorageLogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error, critical

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

    public func log(level: StorageLogLevel, message: String, metadata: [String: String]?) {
        guard level >= minimumLevel else { return }
        var line = "[LocalStorage] \(level): \(message)"
        if let metadata, !metadata.isEmpty {
            line += " " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

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

    public func record(duration: TimeInterval, operation: String) {
        logger.debug("\(operation, privacy: .public) took \(duration * 1e6) µs")
    }
}
#endif
