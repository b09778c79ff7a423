import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Testing) @testable import LocalStorageKit

@Suite struct RESPParserTests {
    static let replies: [(String, RESPValue)] = [
        ("+OK\r\n", .simple("OK")),
        ("-ERR wrong\r\n", .error("ERR wrong")),
        (":42\r\n", .integer(42)),
        (":-7\r\n", .integer(-7)),
        ("$5\r\nhello\r\n", .bulk(Array("hello".utf8))),
        ("$0\r\n\r\n", .bulk([])),
        ("$-1\r\n", .null),
        ("*-1\r\n", .null),
        ("_\r\n", .null),
        ("*2\r\n$1\r\na\r\n:1\r\n", .array([.bulk([97]), .integer(1)])),
        ("*2\r\n*1\r\n+x\r\n*0\r\n", .array([.array([.simple("x")]), .array([])])),
        (",3.5\r\n", .double(3.5)),
        ("#t\r\n", .boolean(true)),
        ("%1\r\n+k\r\n:2\r\n", .array([.simple("k"), .integer(2)])),
        (
            ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n",
            .push([.bulk(Array("message".utf8)), .bulk([99]), .bulk([109])])
        ),
        ("=8\r\ntxt:abcd\r\n", .bulk(Array("abcd".utf8))),
    ]

    @Test(arguments: replies.indices)
    func parsesEachReplyType(_ index: Int) throws {
        let (wire, expected) = Self.replies[index]
        var parser = RESPParser()
        Array(wire.utf8).withUnsafeBytes { parser.append($0) }
        #expect(try parser.next() == expected)
        #expect(try parser.next() == nil)
    }

    @Test func anIncompleteReplyWaitsForTheRestByteByByte() throws {
        let values = try Self.parsedByteByByte("*3\r\n$3\r\nfoo\r\n:12\r\n$-1\r\n+done\r\n")
        #expect(values == [.array([.bulk(Array("foo".utf8)), .integer(12), .null]), .simple("done")])
    }

    /// The replies `wire` holds, given to a parser one byte at a time.
    static func parsedByteByByte(_ wire: String) throws -> [RESPValue] {
        var parser = RESPParser()
        var values: [RESPValue] = []
        for byte in wire.utf8 {
            [byte].withUnsafeBytes { parser.append($0) }
            while let value = try parser.next() { values.append(value) }
        }
        return values
    }

    @Test(arguments: ["?x\r\n", ":abc\r\n", "$3\r\nabcd\r\n", "$\(RESPParser.maxBulkLength + 1)\r\n", "+a\rb\r\n"])
    func malformedRepliesThrow(_ wire: String) {
        var parser = RESPParser()
        Array(wire.utf8).withUnsafeBytes { parser.append($0) }
        #expect(throws: RESPParser.Failure.self) { try parser.next() }
    }

    @Test func commandsEncodeAsArraysOfBulkStrings() {
        var out: [UInt8] = []
        RESPCommand.encode([Array("SET".utf8), Array("k".utf8), [0, 13, 10]], into: &out)
        #expect(out == Array("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\n".utf8) + [0, 13, 10] + [13, 10])
    }
}

@Suite(.enabled(if: SharedTestServer.isAvailable, SharedTestServer.skipReason))
struct RESPConnectionTests {
    /// Timeouts far longer than a loaded machine's stalls: none of these tests is about a timeout (a server
    /// that fsyncs every write for other suites, or this process descheduled, took seconds to answer).
    func endpoint(port: Int? = SharedTestServer.port, password: String? = nil, database: Int = 0) -> RESPEndpoint {
        RESPEndpoint(
            host: "127.0.0.1", port: port ?? 1, username: nil, password: password, database: database,
            connectTimeout: .seconds(30), readTimeout: .seconds(30))
    }

    @Test func pipelinesConcurrentRequestsAndAnswersEachInOrder() async throws {
        let connection = RESPConnection(
            endpoint: endpoint(), reconnectDelay: .milliseconds(10),
            maxReconnectDelay: .milliseconds(100), clock: SystemClock(), name: "test")
        defer { connection.stop() }
        let key = "resp-test-\(UUID().uuidString)"
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<200 {
                group.addTask {
                    let replies = try await connection.send([
                        .command("SET", "\(key):\(n)", "v\(n)"),
                        .command("GET", "\(key):\(n)"),
                    ])
                    #expect(replies == [.simple("OK"), .bulk(Array("v\(n)".utf8))])
                }
            }
            try await group.waitForAll()
        }
        let deleted = try await connection.call(.command("DEL", "\(key):0", "\(key):1"))
        #expect(deleted == .integer(2))
        #expect(connection.connectionCount == 1)
    }

    @Test func anUnreachablePortSaysWhatFailed() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let port = refusing.port
        let clock = VirtualClock()
        let connection = RESPConnection(
            endpoint: endpoint(port: port), reconnectDelay: .seconds(1),
            maxReconnectDelay: .seconds(4), clock: clock, name: "test")
        defer { connection.stop() }
        let error = await #expect(throws: LocalStorageError.self) { try await connection.send([.command("PING")]) }
        guard case .sharedTierUnavailable(let reason) = error else {
            Issue.record("expected sharedTierUnavailable, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("127.0.0.1:\(port)"))
        #expect(reason.contains("refused"))
        // Within the backoff delay the next attempt fails at once with the same reason.
        let again = await #expect(throws: LocalStorageError.self) { try await connection.send([.command("PING")]) }
        #expect("\(String(describing: again))".contains("next attempt"))
        // Once the clock passes the backoff, the next call tries again (and the delay doubles).
        clock.advance(by: .seconds(1))
        let third = await #expect(throws: LocalStorageError.self) { try await connection.send([.command("PING")]) }
        #expect(!"\(String(describing: third))".contains("next attempt"))
        #expect("\(String(describing: third))".contains("refused"))
        clock.advance(by: .milliseconds(1999))
        let fourth = await #expect(throws: LocalStorageError.self) { try await connection.send([.command("PING")]) }
        #expect("\(String(describing: fourth))".contains("next attempt"))
    }

    @Test func aWrongDatabaseNumberIsRefusedClearly() async throws {
        let connection = RESPConnection(
            endpoint: endpoint(database: 100_000), reconnectDelay: .milliseconds(10),
            maxReconnectDelay: .milliseconds(10), clock: SystemClock(), name: "test")
        defer { connection.stop() }
        let error = await #expect(throws: LocalStorageError.self) { try await connection.send([.command("PING")]) }
        #expect("\(String(describing: error))".contains("SELECT 100000"))
    }

    @Test func theSubscriberReportsMessagesAndReconnects() async throws {
        // A private server: killing every subscriber connection must not touch other tests' stores.
        let server = try await RedisTestServer.started()
        defer { server.stop() }
        let channel = "resp-test-\(UUID().uuidString)"
        let (stream, continuation) = AsyncStream<SubscriberEvent>.makeStream()
        let subscriber = RESPSubscriber(
            endpoint: endpoint(port: server.port), channel: Array(channel.utf8),
            reconnectDelay: .milliseconds(10), maxReconnectDelay: .milliseconds(50), clock: SystemClock(),
            name: "test", report: { continuation.yield($0) })
        defer { subscriber.stop() }
        let connection = RESPConnection(
            endpoint: endpoint(port: server.port), reconnectDelay: .milliseconds(10),
            maxReconnectDelay: .milliseconds(100), clock: SystemClock(), name: "test")
        defer { connection.stop() }
        var iterator = stream.makeAsyncIterator()
        guard case .subscribed = await iterator.next() else {
            Issue.record("expected the subscription first")
            return
        }
        _ = try await connection.call(.command("PUBLISH", channel, "one"))
        guard case .message(let payload) = await iterator.next() else {
            Issue.record("expected a message")
            return
        }
        #expect(payload == Array("one".utf8))
        // Kill the subscriber's connection from the server side: it comes back by itself.
        _ = try await connection.call(.command("CLIENT", "KILL", "TYPE", "pubsub"))
        var resubscribed = false
        while let event = await iterator.next() {
            if case .subscribed = event {
                resubscribed = true
                break
            }
        }
        #expect(resubscribed)
    }
}

/// The parser against the values it was given, on random replies cut at random places: it resumes where it
/// stopped, inside arrays and bulk strings.
@Suite struct RESPParserResumeTests {
    /// A random reply and its wire form (no attributes, maps as the arrays they parse into).
    static func reply(depth: Int, using generator: inout SplitMix64) -> (RESPValue, [UInt8]) {
        switch generator.below(depth < 3 ? 8 : 5) {
        case 0:
            let number = Int64(generator.below(2_000)) - 1_000
            return (.integer(number), Array(":\(number)\r\n".utf8))
        case 1:
            let bytes = (0..<generator.below(3_000)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            return (.bulk(bytes), Array("$\(bytes.count)\r\n".utf8) + bytes + [13, 10])
        case 2: return (.null, Array("$-1\r\n".utf8))
        case 3: return (.simple("OK"), Array("+OK\r\n".utf8))
        case 4: return (.error("ERR x"), Array("-ERR x\r\n".utf8))
        default:
            let count = generator.below(6)
            var elements: [RESPValue] = []
            var wire = Array("*\(count)\r\n".utf8)
            for _ in 0..<count {
                let (value, bytes) = reply(depth: depth + 1, using: &generator)
                elements.append(value)
                wire += bytes
            }
            return (.array(elements), wire)
        }
    }

    @Test(arguments: 0..<20)
    func repliesCutAnywhereParseAsWritten(_ seed: Int) throws {
        var generator = SplitMix64(seed: UInt64(seed) + 900)
        var expected: [RESPValue] = []
        var wire: [UInt8] = []
        for _ in 0..<30 {
            let (value, bytes) = Self.reply(depth: 0, using: &generator)
            expected.append(value)
            wire += bytes
        }
        var parser = RESPParser()
        var parsed: [RESPValue] = []
        var offset = 0
        while offset < wire.count {
            let end = min(wire.count, offset + 1 + generator.below(seed.isMultiple(of: 2) ? 7 : 4_000))
            wire[offset..<end].withUnsafeBytes { parser.append($0) }
            offset = end
            while let value = try parser.next() { parsed.append(value) }
        }
        // Compared one by one: a failure prints one reply, not every one.
        #expect(parsed.count == expected.count)
        let first = expected.indices.first { $0 >= parsed.count || parsed[$0] != expected[$0] }
        #expect(first == nil, "reply \(first ?? -1) of \(expected.count) differs")
        #expect(!parser.hasBufferedBytes)
    }

    /// A large reply read 64 KiB at a time is parsed once, not again from its start after every read (which
    /// made a catch-up's `MGET` of large records take time quadratic in its size).
    @Test func aLargeReplyReadInPiecesCopiesEachBulkStringOnce() throws {
        let record = [UInt8](repeating: 7, count: 10_000)
        let wire = Array("*2000\r\n".utf8) + (0..<2_000).flatMap { _ in Array("$10000\r\n".utf8) + record + [13, 10] }
        var parser = RESPParser()
        var values: [RESPValue] = []
        for start in stride(from: 0, to: wire.count, by: 65_536) {
            wire[start..<min(wire.count, start + 65_536)].withUnsafeBytes { parser.append($0) }
            while let value = try parser.next() { values.append(value) }
        }
        #expect(values == [.array(Array(repeating: .bulk(record), count: 2_000))])
        #expect(parser.bulkBytesCopied == 2_000 * record.count)
    }

    @Test func anAttributeBeforeAValueInsideAnArrayIsDropped() throws {
        let values = try RESPParserTests.parsedByteByByte("*2\r\n|1\r\n+key\r\n:7\r\n:1\r\n:2\r\n")
        #expect(values == [.array([.integer(1), .integer(2)])])
    }

    @Test func repliesNestedDeeperThanTheLimitThrow() {
        var parser = RESPParser()
        Array(String(repeating: "*1\r\n", count: RESPParser.maxDepth + 1).utf8).withUnsafeBytes { parser.append($0) }
        #expect(throws: RESPParser.Failure.self) { try parser.next() }
    }

    /// A reply whose values are not one per key asked for is refused: records would land on other ids.
    @Test func mgetRepliesOfAnotherLengthAreRefused() throws {
        let two: RESPValue = .array([.bulk([1]), .null])
        #expect(try SharedTier.values(ofMGETReplies: [two], keyCounts: [2], server: "s") == [[1], nil])
        for (replies, counts) in [
            ([two], [3]), ([two], [1]), ([two], [2, 2]), ([RESPValue.array([.bulk([1]), .integer(3)])], [2]),
        ] {
            #expect(throws: LocalStorageError.self) {
                try SharedTier.values(ofMGETReplies: replies, keyCounts: counts, server: "s")
            }
        }
    }
}

/// A socket's write has one deadline in all: a server that keeps taking a few bytes at a time cannot hold a
/// write (and the connection's thread with every request behind it) for longer than the timeout.
@Suite struct RESPSocketWriteDeadlineTests {
    /// A loopback listener that accepts one connection and reads it 1 KiB at a time, slowly, until closed.
    final class TricklingServer: @unchecked Sendable {
        let listener: Int32
        let port: Int
        private let done = DispatchSemaphore(value: 0)

        init() throws {
            let (listener, port) = try loopbackListener(receiveBuffer: 4096)
            self.listener = listener
            self.port = port
            let done = self.done
            Thread.detachNewThread {
                let connection = accept(listener, nil, nil)
                var buffer = [UInt8](repeating: 0, count: 1024)
                while connection >= 0 && recv(connection, &buffer, buffer.count, 0) > 0 { usleep(5_000) }
                if connection >= 0 { close(connection) }
                done.signal()
            }
        }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }

        func waitForReader() { done.wait() }
    }

    @Test func aWriteToASlowReaderEndsAtItsTimeout() throws {
        let server = try TricklingServer()
        defer { server.stop() }
        let socket = try RESPSocket.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        var small: Int32 = 4096
        setsockopt(socket.descriptor, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        // 1 MiB at 1 KiB a 5 ms takes the reader five seconds or more: the write must give up at 300 ms, though
        // every wait for the socket sees some progress.
        let bytes = [UInt8](repeating: 0x2A, count: 1 << 20)
        let error = #expect(throws: LocalStorageError.self) { try socket.write(bytes, timeout: .milliseconds(300)) }
        #expect("\(String(describing: error))".contains("timed out"))
        socket.close()
        server.waitForReader()
    }
}

/// A reply's deadline counts from the last bytes that came: a large reply (a catch-up's records after an outage)
/// arriving more slowly than `readTimeout` in all was refused, and the catch-up retried the same request forever.
@Suite struct RESPSlowReplyTests {
    /// A loopback server that answers `SELECT` at once, then answers the next request with one bulk string of
    /// `size` bytes sent 1 KiB at a time, each part 25 ms of `clock` after the one before.
    final class SlowReplyServer: @unchecked Sendable {
        let listener: Int32
        let port: Int

        init(size: Int, clock: VirtualClock) throws {
            let (listener, port) = try loopbackListener()
            self.listener = listener
            self.port = port
            Thread.detachNewThread {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                defer { close(connection) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                func put(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) } }
                guard recv(connection, &buffer, buffer.count, 0) > 0 else { return }  // SELECT
                put(Array("+OK\r\n".utf8))
                guard recv(connection, &buffer, buffer.count, 0) > 0 else { return }  // the request
                var reply = Array("$\(size)\r\n".utf8) + [UInt8](repeating: 0x61, count: size) + Array("\r\n".utf8)
                while !reply.isEmpty {
                    clock.advance(by: .milliseconds(25))
                    put(Array(reply.prefix(1024)))
                    reply.removeFirst(min(1024, reply.count))
                }
                _ = recv(connection, &buffer, buffer.count, 0)  // Until the client closes.
            }
        }

        deinit { close(listener) }
    }

    @Test(.timeLimit(.minutes(5))) func aLargeReplyThatKeepsComingIsNotTimedOut() throws {
        // 128 parts 25 ms of the virtual clock apart: over 3 s in all, against a 1 s timeout (real time plays no
        // part: a client descheduled for a while finds the parts waiting).
        let size = 128 * 1024
        let clock = VirtualClock()
        let server = try SlowReplyServer(size: size, clock: clock)
        let endpoint = RESPEndpoint(
            host: "127.0.0.1", port: server.port, username: nil, password: nil, database: 0,
            connectTimeout: .seconds(30), readTimeout: .seconds(1))
        let session = try RESPSession(endpoint: endpoint, clock: clock)
        defer { session.close() }
        let replies = try session.roundTrip([.command("GET", "big")])
        #expect(replies.first?.bytes?.count == size)
    }
}

/// A TCP socket listening on a free loopback port (with `receiveBuffer` bytes of receive buffer when given), and
/// its port.
func loopbackListener(receiveBuffer: Int32? = nil) throws -> (descriptor: Int32, port: Int) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    if var size = receiveBuffer {
        setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
    }
    guard bound == 0, listen(listener, 1) == 0 else {
        close(listener)
        throw POSIXError(.EADDRINUSE)
    }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    return (listener, Int(UInt16(bigEndian: address.sin_port)))
}
