import CLMDB
import Foundation
@_spi(Testing) import LocalStorageKit
import LocalStorageTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A helper process for the reliability tests: it saves, grows, holds reader slots or locks on a
/// store directory while a test kills it, reads alongside it, or checks what it left behind.
///
/// ```
/// LocalStorageStress save-loop DIR full|relaxed|none [COUNT] [PREFIX]   prints each id after its save returns
/// LocalStorageStress grow DIR COUNT                                     saves COUNT 2 KB records, 100 a commit
/// LocalStorageStress hold-readers DIR [COUNT]                           fills the reader table (or takes
///                                                                       COUNT slots), then sleeps
/// LocalStorageStress hold-lock FILE                                     holds a shared lock on byte 0 of FILE
/// LocalStorageStress open DIR [--as-nobody] [--hold]                    opens the store; prints the outcome;
///                                                                       with --hold keeps it open until killed
/// LocalStorageStress compact-open DIR FRACTION [STEP|hold]   opens it compacting (see CompactionDriver)
/// LocalStorageStress shared DIR PORT NAMESPACE   an instance of a store with a shared tier on the Redis
///                                                server at 127.0.0.1:PORT, driven from standard input
///                                                (see SharedTierDriver)
/// LocalStorageStress bounded DIR MAX  a store of at most MAX records (policy .adaptive) driven from standard
///                                      input: `fetch ID N` (reads ID N times; replies `hit` or `miss`),
///                                      `save ID` (replies `ok RECORDS`, the count after the commit)
/// LocalStorageStress evolve DIR        runs EvolutionDriver commands from standard input, one reply each
/// LocalStorageStress address-space DIR  limits its address space, then saves 1 MiB records until the map
///                                      cannot grow; prints `full N` and `read` once a record reads back
/// LocalStorageStress adopt-map DIR     opens the store, limits its address space to 256 MiB more than it maps,
///                                      prints `ready`, and at each line on standard input reads a record and
///                                      prints `read`, `missing` or `error: …` (another process grows the map)
/// LocalStorageStress long-write DIR    saves one record, then 2,000 in one write transaction that never ends
/// LocalStorageStress overwrite DIR     runs `save ID SEQUENCE`, `batch PREFIX COUNT SEQUENCE` (records
///                                      PREFIX0… in one save), `expire ID SECONDS`, `delete ID`, `clear` from standard input on
///                                      StressRecord, replying `ok` once each write returned
/// LocalStorageStress overwrite-retention DIR N   the same, with a change log that keeps N changes
/// LocalStorageStress load DIR ID CALLERS LOADFILE MILLIS|hang|nil-on-input [PORT NAMESPACE TIMEOUT_MS]   CALLERS tasks
///                                      fetch ID through the cache at once; the loader appends a line to
///                                      LOADFILE (see LoadDriver); with a shared tier on PORT when given
/// LocalStorageStress main-thread-exit  prints `ready` and ends its main thread while another thread sleeps
/// LocalStorageStress in-memory hold|exit                                opens an in-memory store, prints the
///                                                                       directory of its open files, then
///                                                                       sleeps until killed or exits with the
///                                                                       store still referenced
/// ```
@main
struct LocalStorageStress {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch arguments.first {
            case "save-loop" where arguments.count >= 3:
                try await saveLoop(
                    directory: arguments[1], durability: arguments[2],
                    count: arguments.count > 3 ? Int(arguments[3]) ?? Int.max : Int.max,
                    prefix: arguments.count > 4 ? arguments[4] : "r")
            case "grow" where arguments.count == 3:
                try await grow(directory: arguments[1], count: Int(arguments[2]) ?? 1000)
            case "hold-readers" where arguments.count == 2 || arguments.count == 3:
                try holdReaders(directory: arguments[1], count: arguments.count == 3 ? Int(arguments[2]) ?? 1 : Int.max)
            case "hold-lock" where arguments.count == 2:
                try holdLock(file: arguments[1])
            case "main-thread-exit" where arguments.count == 1:
                endMainThread()
            case "adopt-map" where arguments.count == 2:
                try await adoptMap(directory: arguments[1])
            case "address-space" where arguments.count == 2 || arguments.count == 3:
                let headroom = arguments.count == 3 ? Int(arguments[2]) ?? 384 : 384
                try await addressSpace(directory: arguments[1], headroomMiB: headroom)
            case "long-write" where arguments.count == 2:
                try await longWrite(directory: arguments[1])
            case "overwrite" where arguments.count == 2 || arguments.count == 3:
                try await overwrite(directory: arguments[1], keyHex: arguments.count == 3 ? arguments[2] : nil)
            case "overwrite-retention" where arguments.count == 3:
                guard let retention = Int(arguments[2]) else { throw StressError(description: "bad retention") }
                try await overwrite(directory: arguments[1], keyHex: nil, retention: retention)
            case "evolve" where arguments.count == 2:
                try await evolve(directory: arguments[1])
            case "in-memory" where arguments.count == 2 && ["hold", "exit"].contains(arguments[1]):
                try await inMemory(exitWithoutClosing: arguments[1] == "exit")
            case "shared" where arguments.count == 4:
                try await SharedTierDriver.run(
                    directory: arguments[1], port: Int(arguments[2]) ?? 0,
                    namespace: arguments[3])
            case "load" where arguments.count == 6 || arguments.count == 9:
                try await LoadDriver.run(
                    directory: arguments[1], id: arguments[2], callers: Int(arguments[3]) ?? 1,
                    loadFile: arguments[4], delay: arguments[5],
                    shared: arguments.count == 9
                        ? LoadDriver.Shared(
                            port: Int(arguments[6]) ?? 0, namespace: arguments[7],
                            timeout: .milliseconds(Int(arguments[8]) ?? 30_000)) : nil)

            case "compressed" where arguments.count == 3:
                try await compressed(directory: arguments[1], count: Int(arguments[2]) ?? 1)
            case "bounded" where arguments.count == 3:
                try await bounded(directory: arguments[1], maxRecords: Int(arguments[2]) ?? 1)
            case "compact-open" where arguments.count >= 3:
                try CompactionDriver.run(
                    directory: arguments[1], threshold: Double(arguments[2]) ?? 0.5,
                    killAt: arguments.count > 3 ? arguments[3] : nil)
            case "open" where arguments.count >= 2:
                let options = arguments.dropFirst(2)
                openStore(
                    directory: arguments[1], asNobody: options.contains("--as-nobody"), hold: options.contains("--hold")
                )
            default:
                say("usage: LocalStorageStress save-loop|grow|hold-readers|hold-lock|open …")
                exit(2)
            }
        } catch {
            say("error: \(error)")
            exit(1)
        }
    }

    /// Writes one line to standard output with `write(2)`: nothing stays buffered when the process dies.
    static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            offset += written
        }
    }

    static func configuration(
        _ directory: String, durability: StorageDurability,
        mapSize: Int
    ) -> LocalStorageConfiguration {
        var configuration = LocalStorageConfiguration()
        configuration.databaseDirectory = URL(fileURLWithPath: directory, isDirectory: true)
        configuration.durability = durability
        configuration.mapSize = mapSize
        configuration.maxMapSize = 1 << 30
        configuration.growsMapFromMapSize = true  // the map grows under these processes' work
        configuration.expirySweepInterval = nil
        return configuration
    }

    // MARK: - Modes

    /// Saves records one by one on a 64 KiB map that has to grow, printing each id once its save returned.
    /// Every seventh save replaces an earlier record, every fifth has no group, every third expires in a day.
    static func saveLoop(directory: String, durability name: String, count: Int, prefix: String) async throws {
        let durability: StorageDurability
        switch name {
        case "full": durability = .full
        case "relaxed": durability = .relaxed
        case "none": durability = .none
        default: throw StressError(description: "unknown durability \(name)")
        }
        let storage = try LocalStorage(
            configuration: configuration(
                directory, durability: durability,
                mapSize: 64 << 10))
        say("ready")
        var sequence = 0
        while sequence < count {
            let replaces = sequence % 7 == 6
            let id = replaces ? "\(prefix)-\(sequence / 2)" : "\(prefix)-\(sequence)"
            let record = StressRecord.make(id: id, sequence: sequence)
            try await storage.save(record, expiration: sequence % 3 == 0 ? .days(1) : .never)
            say(id)
            sequence += 1
        }
        say("done")
    }

    /// Saves `count` records of about 2 KB on a 16 MiB map, so that a process with a smaller map sees
    /// `MDB_MAP_RESIZED`.
    static func grow(directory: String, count: Int) async throws {
        let storage = try LocalStorage(
            configuration: configuration(
                directory, durability: .none,
                mapSize: 16 << 20))
        var saved = 0
        while saved < count {
            let batch = (saved..<min(count, saved + 100)).map { n in
                StressRecord(id: "grow-\(n)", group: "grow", sequence: n, blob: String(repeating: "g", count: 2000))
            }
            try await storage.save(contentsOf: batch)
            saved += batch.count
        }
        say("done \(saved)")
    }

    /// Commits one record, then writes 2,000 more in one transaction whose body prints `inside` and then
    /// sleeps until the process is killed: none of the 2,000 may survive, the first one must.
    static func longWrite(directory: String) async throws {
        let storage = try LocalStorage(configuration: configuration(directory, durability: .full, mapSize: 1 << 20))
        try await storage.save(StressRecord.make(id: "before", sequence: 0))
        say("saved")
        try await storage.write { tx in
            for n in 0..<2000 { try tx.save(StressRecord.make(id: "inside-\(n)", sequence: n)) }
            say("inside")
            while true { sleep(1) }
        }
    }

    /// Reads and writes `StressRecord`s in a bounded store as told on standard input (see the usage).
    /// Saves `count` records `c0`, `c1`, … in batches of 100 into a store opened with `.zstd()` (which trains a
    /// dictionary once it has sampled enough of them), then prints `done`.
    static func compressed(directory: String, count: Int) async throws {
        var configuration = configuration(directory, durability: .none, mapSize: 1 << 20)
        configuration.compression = .zstd()
        let storage = try LocalStorage(configuration: configuration)
        for start in stride(from: 0, to: count, by: 100) {
            try await storage.save(
                contentsOf: (start..<min(count, start + 100)).map { StressRecord.make(id: "c\($0)", sequence: $0) })
        }
        say("done")
    }

    static func bounded(directory: String, maxRecords: Int) async throws {
        var configuration = configuration(directory, durability: .none, mapSize: 1 << 20)
        configuration.limits = StorageLimits(maxRecords: maxRecords)
        configuration.evictionPolicy = .adaptive
        let storage = try LocalStorage(configuration: configuration)
        await serveCommands { words in
            switch words.first {
            case "fetch" where words.count == 3:
                var found = false
                for _ in 0..<max(0, Int(words[2]) ?? 1) {
                    found = try await storage.fetch(StressRecord.self, id: words[1]) != nil
                }
                return found ? "hit" : "miss"
            case "save" where words.count == 2:
                try await storage.save(StressRecord.make(id: words[1], sequence: 0))
                return "ok \(try await storage.count(StressRecord.self))"
            default:
                throw StressError(description: "unknown command \(words.joined(separator: " "))")
            }
        }
    }

    /// Says `ready`, then answers each line of standard input with what `answer` makes of its words (split at
    /// spaces), or `error: …` when it throws, until the input ends.
    static func serveCommands(_ answer: ([String]) async throws -> String) async {
        say("ready")
        while let line = readLine() {
            do {
                say(try await answer(line.split(separator: " ").map(String.init)))
            } catch {
                say("error: \(error)")
            }
        }
    }

    /// Answers ``EvolutionDriver`` commands read from standard input until it ends.
    static func evolve(directory: String) async throws {
        let storage = try LocalStorage(configuration: configuration(directory, durability: .none, mapSize: 1 << 20))
        say("ready")
        while let line = readLine() {
            say(await EvolutionDriver.perform(line, on: storage))
        }
    }

    /// Opens the store with raw LMDB (the library's flags and limits) and begins read transactions until
    /// the reader table is full (or it holds `count`), then sleeps until killed: every slot it holds becomes
    /// stale.
    static func holdReaders(directory: String, count: Int) throws {
        var env: OpaquePointer?
        try lmdb(mdb_env_create(&env), "mdb_env_create")
        try lmdb(mdb_env_set_maxdbs(env, 4096), "mdb_env_set_maxdbs")
        try lmdb(mdb_env_set_maxreaders(env, 512), "mdb_env_set_maxreaders")
        try lmdb(mdb_env_open(env, directory, UInt32(MDB_NOTLS), 0o644), "mdb_env_open")
        var held = 0
        while held < count {
            var txn: OpaquePointer?
            let code = mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn)
            if code == MDB_READERS_FULL { break }
            try lmdb(code, "mdb_txn_begin")
            held += 1
        }
        say("holding \(held)")
        while true { sleep(60) }
    }

    /// Starts a thread that sleeps until the process is killed, prints `ready`, and ends the main thread: the process
    /// lives on, and Linux shows it as a zombie (state `Z`) with more than one thread.
    static func endMainThread() -> Never {
        let sleeper = Thread { while true { sleep(60) } }
        sleeper.start()
        say("ready")
        pthread_exit(nil)
    }

    /// Holds a shared `fcntl` lock on byte 0 of `file`, as a process using that LMDB lock file would.
    static func holdLock(file: String) throws {
        let descriptor = Foundation.open(file, O_RDWR)
        guard descriptor >= 0 else { throw StressError(description: "cannot open \(file)") }
        var lock = flock()
        lock.l_type = Int16(F_RDLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        guard fcntl(descriptor, F_SETLK, &lock) == 0 else { throw StressError(description: "cannot lock \(file)") }
        say("locked")
        while true { sleep(60) }
    }

    /// Opens the store and prints `opened` or the error; as root with `--as-nobody`, drops to `nobody`
    /// first so that file permissions apply.
    static func openStore(directory: String, asNobody: Bool, hold: Bool) {
        if asNobody && getuid() == 0 {
            guard setgid(65534) == 0, setuid(65534) == 0 else {
                say("error: cannot drop privileges")
                exit(2)
            }
        }
        do {
            let storage = try LocalStorage(configuration: configuration(directory, durability: .full, mapSize: 1 << 20))
            say("opened")
            if hold {
                keptStore.withLock { $0 = storage }
                while true { sleep(60) }
            }
        } catch let error as LocalStorageError {
            say("LocalStorageError: \(error)")
            exit(1)
        } catch {
            say("other error: \(error)")
            exit(3)
        }
    }

    /// A store kept alive to the end of the process, as an app keeping it in a global would.
    static let keptStore = Mutex<LocalStorage?>(nil)

    /// Opens an in-memory store and saves to it, prints `dir PATH` for the directory of each file it has
    /// open (read from `/proc/self/fd`, so it is found even once unlinked), then `ready`; then sleeps until
    /// killed, or exits at once without closing the store.
    static func inMemory(exitWithoutClosing: Bool) async throws {
        // Files of in-memory stores the parent had open may be inherited: only the new ones are this store's.
        let inherited = try storeDirectoriesOfOpenFiles()
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(StressRecord.make(id: "m", sequence: 1))
        keptStore.withLock { $0 = storage }
        for directory in try storeDirectoriesOfOpenFiles().subtracting(inherited).sorted() { say("dir \(directory)") }
        say("ready")
        if exitWithoutClosing { exit(0) }
        while true { sleep(60) }
    }

    /// The directories of the LocalStorageKit store files this process has open (from `/proc/self/fd`).
    static func storeDirectoriesOfOpenFiles() throws -> Set<String> {
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        var directories: Set<String> = []
        for descriptor in descriptors {
            let link = "/proc/self/fd/\(descriptor)"
            // A descriptor closed since the listing (the listing's own, say) has no target and is no store file.
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link),
                target.contains("LocalStorageKit-"), target.contains(".mdb")
            else { continue }
            let path = target.hasSuffix(" (deleted)") ? String(target.dropLast(" (deleted)".count)) : target
            directories.insert(URL(fileURLWithPath: path).deletingLastPathComponent().path)
        }
        return directories
    }

    static func lmdb(_ code: Int32, _ call: String) throws {
        guard code == MDB_SUCCESS else {
            throw StressError(description: "\(call): \(String(cString: mdb_strerror(code)))")
        }
    }
}

struct StressError: Error, CustomStringConvertible {
    let description: String
}
