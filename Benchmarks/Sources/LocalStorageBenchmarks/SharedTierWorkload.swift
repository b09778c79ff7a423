import Foundation
@_spi(Benchmarks) import LocalStorageKit
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Workloads {
    static let sharedHit = "shared tier: near-cache hit"
    static let sharedMiss = "shared tier: read, local miss"
    static let sharedSave = "shared tier: save"
    static let sharedVisible = "shared tier: save → visible in another process"
    static let rawGET = "raw GET round trip"
    static let rawSET = "raw SET round trip"

    /// The shared tier against plain GET/SET round trips on the same Redis server: a near-cache hit, a local
    /// miss read from the server (and kept), a save (server script, then the local commit), and a save until
    /// another process's change stream has it. Nil (the run says why) when no server can be found or started.
    static func shared(products: [Product], isQuick: Bool) -> Workload? {
        guard let server = SharedBenchmarkServer.start() else { return nil }
        let probe = SharedTierProbe(server: server, products: Array(products.prefix(2_000)))
        let operations = isQuick ? 100 : 400
        let contenders = [
            Contender(
                name: sharedHit, operations: operations, isComparable: false,
                prepare: { _ in try await probe.prepare() }, run: { _ in try await probe.hits(operations) }),
            Contender(
                name: sharedMiss, operations: operations, isComparable: false,
                prepare: { _ in try await probe.prepareMisses() },
                run: { _ in try await probe.misses(operations) }),
            Contender(
                name: sharedSave, operations: operations, isComparable: false,
                prepare: { _ in try await probe.prepareAlone() },
                run: { batch in try await probe.saves(operations, batch) }),
            Contender(
                name: sharedVisible, operations: operations / 4, isComparable: false,
                prepare: { _ in try await probe.prepareFollower() },
                run: { batch in try await probe.visible(operations / 4, batch) }),
            Contender(
                name: rawGET, operations: operations, isComparable: false,
                prepare: { _ in try await probe.prepare() }, run: { _ in try await probe.rawGets(operations) }),
            Contender(
                name: rawSET, operations: operations, isComparable: false,
                prepare: { _ in try await probe.prepareAlone() },
                run: { batch in try await probe.rawSets(operations, batch) }),
        ]
        return Workload(
            name: "shared",
            description: "LocalStorageKit with a shared tier (Redis \(server.label), in-memory near cache) against "
                + "plain GET/SET round trips on the same server; one operation after another",
            durability: "near cache .none (in memory); server as started (see the server line)",
            batches: isQuick ? 7 : 15, warmups: 1, clock: .wall, contenders: contenders,
            rows: [
                SummaryRow(
                    label: "shared tier: near-cache hit vs a GET round trip (aim ≥ 5× faster)",
                    localStorageKit: sharedHit, raw: rawGET,
                    targets: [.atLeast(5, "GET/hit ≥ 5×", rawGET, over: sharedHit)]),
                SummaryRow(
                    label: "shared tier: local miss read from the server vs GET (aim ≤ 3×)",
                    localStorageKit: sharedMiss, raw: rawGET,
                    targets: [.atMost(3, "miss/GET ≤ 3×", sharedMiss, over: rawGET)]),
                SummaryRow(
                    label: "shared tier: save vs SET (aim ≤ 3×)", localStorageKit: sharedSave, raw: rawSET,
                    targets: [.atMost(3, "save/SET ≤ 3×", sharedSave, over: rawSET)]),
                SummaryRow(
                    label: "shared tier: save → visible in another process vs SET (aim ≤ 8×)",
                    localStorageKit: sharedVisible, raw: rawSET,
                    targets: [.atMost(8, "visible/SET ≤ 8×", sharedVisible, over: rawSET)]),
            ])
    }
}

/// The Redis server of the shared-tier workload: `LOCALSTORAGE_REDIS_PORT`'s, else a `redis-server` started on a
/// free loopback port in a temporary directory (stopped when the benchmark exits).
final class SharedBenchmarkServer: Sendable {
    let port: Int
    let label: String
    private let process: ChildProcess?

    private init(port: Int, label: String, process: ChildProcess?) {
        self.port = port
        self.label = label
        self.process = process
    }

    static func start() -> SharedBenchmarkServer? {
        if let text = ProcessInfo.processInfo.environment["LOCALSTORAGE_REDIS_PORT"], let port = Int(text) {
            return SharedBenchmarkServer(
                port: port, label: "127.0.0.1:\(port), from LOCALSTORAGE_REDIS_PORT",
                process: nil)
        }
        let path = ["/usr/bin/redis-server", "/usr/local/bin/redis-server", "/opt/homebrew/bin/redis-server"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else {
            print("shared: skipped (no Redis server: set LOCALSTORAGE_REDIS_PORT or install redis-server)")
            return nil
        }
        do {
            let port = try freePort()
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("LocalStorageBenchmarks-redis-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let process = try ChildProcess(
                executable: path,
                arguments: [
                    "--port", "\(port)", "--bind", "127.0.0.1", "--dir", directory.path,
                    "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                    "--logfile", directory.appendingPathComponent("redis.log").path,
                ])
            let server = SharedBenchmarkServer(
                port: port, label: "127.0.0.1:\(port), appendonly yes, everysec",
                process: process)
            atexit { SharedBenchmarkServer.running.withLock { _ = $0?.kill() } }
            running.withLock { $0 = process }
            return server
        } catch {
            print("shared: skipped (could not start redis-server: \(error))")
            return nil
        }
    }

    private static let running = Mutex<ChildProcess?>(nil)

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchmarkError("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw BenchmarkError("bind() failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw BenchmarkError("getsockname() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The stores, the raw client and the follower process of the shared-tier workload, set up on first use.
final class SharedTierProbe: @unchecked Sendable {
    // @unchecked: used by one benchmark task at a time, batch after batch.
    let server: SharedBenchmarkServer
    let products: [Product]
    let namespace = "bench-\(UUID().uuidString)"
    private var writer: LocalStorage?
    private var reader: LocalStorage?
    private var raw: RawRedisClient?
    private var follower: FollowerProcess?
    private var cursor = 0

    init(server: SharedBenchmarkServer, products: [Product]) {
        self.server = server
        self.products = products
    }

    private func store() throws -> LocalStorage {
        var configuration = LocalStorageConfiguration.inMemory
        guard let url = URL(string: "redis://127.0.0.1:\(server.port)/0") else { throw BenchmarkError("bad URL") }
        configuration.sharedTier = SharedTierConfiguration(url: url, namespace: namespace)
        return try LocalStorage(configuration: configuration)
    }

    /// The writer store holding every product (locally and on the server), and the raw client.
    func prepare() async throws {
        if writer == nil {
            let raw = RawRedisClient(port: server.port)
            let deadline = ContinuousClock.now + .seconds(10)
            while !(await raw.ping()) {
                guard ContinuousClock.now < deadline else { throw BenchmarkError("redis-server does not answer") }
                try await Task.sleep(for: .milliseconds(20))
            }
            self.raw = raw
            let writer = try store()
            _ = try await writer.fetch(Product.self, id: "warm-up")  // waits until in sync
            try await writer.save(contentsOf: products)
            for product in products.prefix(64) { try await raw.set("raw:\(product.id)", Array(product.title.utf8)) }
            self.writer = writer
        }
    }

    /// A fresh reader store (an empty near cache) for a batch of misses.
    func prepareMisses() async throws {
        try await prepare()
        let reader = try store()
        _ = try await reader.fetch(Product.self, id: "warm-up")
        self.reader = reader
        cursor = 0
    }

    /// The writer alone on this host: the misses' reader store closed and the follower process ended (started again
    /// for the next batch of `visible`). Each replicated every save on the same two cores, as instances on other
    /// hosts do on theirs (`prepareMisses` keeps the reader until its next batch), so a save's time included two
    /// other instances' work on the one it was measured on.
    func prepareAlone() async throws {
        try await prepare()
        reader = nil
        follower = nil
    }

    /// The writer and the follower process only (the misses' reader store closed: see ``prepareAlone()``).
    func prepareFollower() async throws {
        try await prepare()
        reader = nil
        if follower == nil { follower = try await FollowerProcess.start(port: server.port, namespace: namespace) }
    }

    func hits(_ count: Int) async throws -> Int {
        guard let writer else { throw BenchmarkError("not prepared") }
        var checksum = Checksum()
        for n in 0..<count {
            guard let product = try await writer.fetch(Product.self, id: products[n % products.count].id) else {
                throw BenchmarkError("a near-cache hit found nothing")
            }
            checksum.add(product)
        }
        return checksum.value
    }

    func misses(_ count: Int) async throws -> Int {
        guard let reader else { throw BenchmarkError("not prepared") }
        var checksum = Checksum()
        for _ in 0..<count {
            let id = products[cursor % products.count].id
            cursor += 1
            guard let product = try await reader.fetch(Product.self, id: id) else {
                throw BenchmarkError("a shared-tier read found nothing")
            }
            checksum.add(product)
        }
        return checksum.value
    }

    func saves(_ count: Int, _ batch: Int) async throws -> Int {
        guard let writer else { throw BenchmarkError("not prepared") }
        for n in 0..<count {
            var product = products[n % products.count]
            product.stock = batch * count + n
            try await writer.save(product)
        }
        return count
    }

    func visible(_ count: Int, _ batch: Int) async throws -> Int {
        guard let writer, let follower else { throw BenchmarkError("not prepared") }
        for n in 0..<count {
            var product = products[n % products.count]
            product.stock = 1_000_000 + batch * count + n
            try await writer.save(product)
            try await follower.awaitSeen("\(product.id) \(product.stock)")
        }
        return count
    }

    func rawGets(_ count: Int) async throws -> Int {
        guard let raw else { throw BenchmarkError("not prepared") }
        var total = 0
        for n in 0..<count { total &+= try await raw.get("raw:\(products[n % 64].id)")?.count ?? 0 }
        return total
    }

    func rawSets(_ count: Int, _ batch: Int) async throws -> Int {
        guard let raw else { throw BenchmarkError("not prepared") }
        for n in 0..<count { try await raw.set("raw:\(products[n % 64].id)", Array("\(batch) \(n)".utf8)) }
        return count
    }
}

/// This benchmark run again as `--shared-follower PORT NAMESPACE`: an instance whose change stream prints
/// `seen ID STOCK` for every product another instance saves.
final class FollowerProcess: Sendable {
    private let process: ChildProcess
    private struct Lines {
        var seen: Set<String> = []
        var ready = false
        var waiter: (line: String, continuation: CheckedContinuation<Void, Never>)?
    }
    private final class LineBox: Sendable {
        let state = Mutex(Lines())
    }
    private let lines = LineBox()

    static func start(port: Int, namespace: String) async throws -> FollowerProcess {
        let follower = try FollowerProcess(port: port, namespace: namespace)
        let deadline = ContinuousClock.now + .seconds(20)
        while !follower.lines.state.withLock({ $0.ready }) {
            guard ContinuousClock.now < deadline, follower.process.isRunning else {
                throw BenchmarkError("the follower process did not start")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        return follower
    }

    private init(port: Int, namespace: String) throws {
        let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        process = try ChildProcess(
            executable: executable.path, arguments: ["--shared-follower", "\(port)", namespace],
            standardOutput: .pipe)
        guard let handle = process.standardOutput else { throw BenchmarkError("the follower has no output pipe") }
        let lines = self.lines
        Thread.detachNewThread {
            var partial: [UInt8] = []
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                for byte in data {
                    guard byte == UInt8(ascii: "\n") else {
                        partial.append(byte)
                        continue
                    }
                    let line = String(decoding: partial, as: UTF8.self)
                    partial.removeAll()
                    let waiter = lines.state.withLock { state -> CheckedContinuation<Void, Never>? in
                        if line == "ready" {
                            state.ready = true
                            return nil
                        }
                        if let waiter = state.waiter, waiter.line == line {
                            state.waiter = nil
                            return waiter.continuation
                        }
                        state.seen.insert(line)
                        return nil
                    }
                    waiter?.resume()
                }
            }
        }
    }

    deinit {
        process.kill()
    }

    /// Waits until the follower printed `seen TEXT` (it always does: the benchmark fails by its own timeout
    /// of the whole run otherwise).
    func awaitSeen(_ text: String) async throws {
        let line = "seen " + text
        guard process.isRunning else { throw BenchmarkError("the follower process ended") }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = lines.state.withLock { state -> Bool in
                if state.seen.remove(line) != nil { return true }
                state.waiter = (line, continuation)
                return false
            }
            if already { continuation.resume() }
        }
    }

    /// The follower's own main: follows the namespace and prints what it sees.
    static func run(port: String, namespace: String) async throws {
        var configuration = LocalStorageConfiguration.inMemory
        guard let url = URL(string: "redis://127.0.0.1:\(port)/0") else { throw BenchmarkError("bad port") }
        configuration.sharedTier = SharedTierConfiguration(url: url, namespace: namespace)
        let storage = try LocalStorage(configuration: configuration)
        _ = try await storage.fetch(Product.self, id: "warm-up")
        let changes = storage.changes(of: Product.self)
        say("ready")
        for await change in changes {
            switch change {
            case .inserted(let product), .updated(let product): say("seen \(product.id) \(product.stock)")
            default: continue
            }
        }
    }

    private static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            offset += written
        }
    }
}
