import Foundation
import LocalStorageKit
import LocalStorageTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The modes that limit the helper's address space (`address-space`, `adopt-map`): a map that cannot grow, or
/// that another process grew past this one's room, is an error, never a read on an unmapped map.
extension LocalStorageStress {
    /// Limits the process's address space to what it maps now and `headroomMiB` MiB more (as iOS or `ulimit -v` do),
    /// then saves 1 MiB records until the map cannot grow (`storageFull`), then reads the first record back: the
    /// map's growth unmapped the map before a mapping that failed, and the read crashed.
    static func addressSpace(directory: String, headroomMiB: Int = 384) async throws {
        var configuration = configuration(directory, durability: .none, mapSize: 64 << 20)
        configuration.maxMapSize = 64 << 30
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(StressRecord.make(id: "first", sequence: 0))
        // Made once, before the limit (so that it takes none of the headroom): building a 1 MiB string a character
        // at a time for each record was most of this driver's time.
        let blob = String(repeating: "b", count: 1 << 20)
        try limitAddressSpace(headroom: headroomMiB << 20)
        var saved = 0
        do {
            while saved < 4096 {
                try await storage.save(StressRecord(id: "big-\(saved)", group: "big", sequence: saved, blob: blob))
                saved += 1
            }
        } catch LocalStorageError.storageFull {
            say("full \(saved)")
        }
        let first = try await storage.fetch(StressRecord.self, id: "first")
        say(first == nil ? "missing" : "read")
    }

    /// Reads on a store whose map another process grows past this process's address space: the read fails with
    /// an error (the adoption of the larger map unmapped the map before the mapping failed, and the read crashed).
    static func adoptMap(directory: String) async throws {
        let storage = try LocalStorage(configuration: configuration(directory, durability: .none, mapSize: 64 << 20))
        _ = try await storage.fetch(StressRecord.self, id: "first")
        try limitAddressSpace(headroom: 256 << 20)
        say("ready")
        while readLine() != nil {
            do {
                say(try await storage.fetch(StressRecord.self, id: "first") == nil ? "missing" : "read")
            } catch {
                say("error: \(error)")
            }
        }
    }

    /// Limits the process's address space to what it maps now and `headroom` bytes more (Linux). Threads made later
    /// share malloc's arenas: each new arena reserves 64 MiB of address space, and two threads the runtime made on a
    /// loaded machine took the headroom the map's growth was to have (`adopt-map` failed its second read in a full
    /// suite run with `ENOMEM`).
    static func limitAddressSpace(headroom: Int) throws {
        #if os(Linux)
        // glibc's `mallopt(M_ARENA_MAX, 1)` (M_ARENA_MAX is -8), which the Glibc module does not bring in.
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") {
            typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
            _ = unsafeBitCast(symbol, to: Mallopt.self)(-8, 1)
        }
        let pages = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ").first
        let used = (pages.flatMap { Int($0) } ?? 0) * sysconf(Int32(_SC_PAGESIZE))
        var limit = rlimit(rlim_cur: rlim_t(used + headroom), rlim_max: rlim_t(used + headroom))
        guard setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == 0 else {
            throw StressError(description: "setrlimit: \(errno)")
        }
        #endif
    }
}
