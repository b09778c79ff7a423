import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who holds a lease: the host (its name, and on Linux its boot and pid namespace), the process id and the
/// process's start time, so that a recycled pid is never mistaken for the holder.
struct ProcessIdentity: Sendable, Hashable {
    /// A 64-bit hash of the host name (and the boot id and pid namespace where the system has them).
    let host: UInt64
    let pid: Int32
    /// The process's start time as the system counts it (clock ticks since boot on Linux; 0 unknown).
    let started: UInt64

    /// This process: in a child after `fork()`, the child, not the parent whose image it copied (review-105 F12: a
    /// child's leases went under its parent's pid, and were taken over when the parent exited).
    static var current: ProcessIdentity {
        // The original process keeps the identity it computed first; a forked child (rare) finds its own each time,
        // which takes no lock another thread of its parent might have held at the fork.
        ForkWatch.generation == original.generation ? original.identity : ProcessIdentity.ofThisProcess()
    }

    /// The identity computed the first time it was asked for, and the fork generation it was computed in (reading
    /// the generation first registers the fork handler, so a later fork is noticed).
    private static let original = (generation: ForkWatch.generation, identity: ofThisProcess())

    /// This process's host (the same in a forked child): what most questions about an entry's owner need.
    static var currentHost: UInt64 { hostOfThisBoot.hash }

    /// Whether ``currentHost`` tells this boot of the host from its others (Linux, with its boot id readable): only then
    /// does the host's boot clock, which starts again at each boot, say when a lease of this host ends.
    static var hostIncludesBoot: Bool { hostOfThisBoot.includesBoot }

    private static let hostOfThisBoot = hostHash()

    private static func ofThisProcess() -> ProcessIdentity {
        ProcessIdentity(host: hostOfThisBoot.hash, pid: getpid(), started: startTime(of: getpid()) ?? 0)
    }

    /// Whether this identity's process is known to be gone: it ran on this host and either no process
    /// has its pid any more, or the one that has it started at another time, or it has ended and waits for its
    /// parent to reap it (a zombie: killed with SIGKILL, its pid stays until `waitpid`). False when it cannot
    /// tell (another host).
    var isGone: Bool {
        // This process is not gone (a load's own lease is checked at every look and at its commit).
        guard host == ProcessIdentity.currentHost, pid > 0 else { return false }
        // (Only an owner with this process's pid needs this process's start time, which a forked child reads anew.)
        if pid == getpid() && self == ProcessIdentity.current { return false }
        if kill(pid, 0) != 0 && errno == ESRCH { return true }
        guard let status = ProcessIdentity.status(of: pid) else { return false }
        if status.hasEnded { return true }
        return started != 0 && status.started != started
    }

    /// The start time of process `pid` (field 22 of `/proc/PID/stat`), or nil where the system has no
    /// such file.
    static func startTime(of pid: Int32) -> UInt64? { status(of: pid)?.started }

    /// The start time of process `pid` and whether it has ended (fields 22, 3 and 20 of `/proc/PID/stat`: state `X`,
    /// or `Z` with one thread left), or nil where the system has no such file.
    private static func status(of pid: Int32) -> (started: UInt64, hasEnded: Bool)? {
        #if os(Linux)
        // No such file: no such process, or a system without /proc; either way the time is unknown.
        let descriptor = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        // Read with plain calls and parsed as bytes: waiters look at a holder every 50 ms, and Foundation's file
        // reading and `String` splitting cost some 230,000 instructions a look (a miss's largest cost).
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1024) { buffer -> (UInt64, Bool)? in
            guard let base = buffer.baseAddress else { return nil }
            var count = 0
            while count < buffer.count {
                let read = Glibc.read(descriptor, base + count, buffer.count - count)
                if read < 0 && errno == EINTR { continue }
                guard read > 0 else { break }
                count += read
            }
            return parseStat(UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
        #else
        return nil
        #endif
    }

    /// The start time and whether the process has ended, from the text of `/proc/PID/stat`.
    static func parseStat(_ text: UnsafeBufferPointer<UInt8>) -> (started: UInt64, hasEnded: Bool)? {
        // Fields after the command name (which may hold spaces and parentheses) start at field 3.
        guard let close = text.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        var fields: [Range<Int>] = []
        fields.reserveCapacity(20)
        var start = close + 1
        while fields.count < 20 && start < text.count {
            while start < text.count && text[start] == UInt8(ascii: " ") { start += 1 }
            var end = start
            while end < text.count && text[end] != UInt8(ascii: " ") && text[end] != UInt8(ascii: "\n") { end += 1 }
            if end > start { fields.append(start..<end) }
            start = end + 1
        }
        guard fields.count == 20, let started = number(text[fields[19]]) else { return nil }
        // A process whose main thread ended while others run shows `Z` too, with more than one thread (field 20):
        // it is alive (review-106 R3).
        let threads = number(text[fields[17]]) ?? 1
        let state = fields[0].count == 1 ? text[fields[0].lowerBound] : 0
        return (started, state == UInt8(ascii: "X") || (state == UInt8(ascii: "Z") && threads <= 1))
    }

    /// The decimal number `digits` holds, or nil.
    private static func number(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 19 else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + UInt64(digit - UInt8(ascii: "0"))
        }
        return value
    }

    private static func hostHash() -> (hash: UInt64, includesBoot: Bool) {
        var name = [UInt8](repeating: 0, count: 256)
        let found = name.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                guard let base = chars.baseAddress else { return false }
                return gethostname(base, chars.count - 1) == 0
            }
        }
        var text = found ? String(decoding: name.prefix { $0 != 0 }, as: UTF8.self) : "unknown-host"
        var includesBoot = false
        #if os(Linux)
        if let boot = FileManager.default.contents(atPath: "/proc/sys/kernel/random/boot_id") {
            let id = String(decoding: boot, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            text += "/" + id
            includesBoot = !id.isEmpty
        }
        // Processes in another pid namespace (containers sharing a host name and a volume) have pids this one
        // cannot look up: they count as on another host, whose holders are never taken for gone.
        var namespace = stat()
        if stat("/proc/self/ns/pid", &namespace) == 0 {
            text += "/pid:\(namespace.st_dev):\(namespace.st_ino)"
        }
        #endif
        // FNV-1a: stable across processes and runs (Hasher is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return (hash, includesBoot)
    }
}
