import Foundation
import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `LocalStorageStress compact-open DIR FRACTION [STEP|hold]`: opens the store in DIR with
/// `compaction: .onOpen(whenFreeFractionExceeds: FRACTION)`, printing `step NAME` as each stage of a
/// compaction completes and the log line of its outcome, then `opened`; with STEP, the process kills itself
/// with SIGKILL right after that stage; with `hold`, it keeps the store open until killed.
enum CompactionDriver {
    static func run(directory: String, threshold: Double, killAt: String?) throws {
        var configuration = LocalStorageStress.configuration(directory, durability: .full, mapSize: 1 << 20)
        configuration.compaction = .onOpen(whenFreeFractionExceeds: threshold)
        configuration.logger = StepLogger(killAt: killAt)
        let storage = try LocalStorage(configuration: configuration)
        LocalStorageStress.say("opened")
        if killAt == "hold" {
            while true { sleep(60) }
        }
        withExtendedLifetime(storage) {}
    }

    /// Prints the stages of compaction and its outcome; kills the process after the stage `killAt`.
    struct StepLogger: StorageLogger {
        let killAt: String?

        func log(level: StorageLogLevel, message: String, metadata: [String: String]?) {
            if let step = metadata?["step"] {
                LocalStorageStress.say("step \(step)")
                if step == killAt { kill(getpid(), SIGKILL) }
            } else if message.hasPrefix("Compact") {
                LocalStorageStress.say(message)
            }
        }

        func record(duration: TimeInterval, operation: String) {}
    }
}
