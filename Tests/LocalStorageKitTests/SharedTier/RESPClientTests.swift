import Foundation
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
        let wire = Array("*3\r\n$3\r\nfoo\r\n:12\r\n$-1\r\n+done\r\n".utf8)
        var parser = RESPParser()
        var values: [RESPValue] = []
        for byte in wire {
            [byte].withUnsafeBytes { parser.append($0) }
            while let value = try parser.next() { values.append(value) }
        }
        #expect(values == [.array([.bulk(Array("foo".utf8)), .integer(12), .null]), .simple("done")])
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
    func endpoint(port: Int? = SharedTestServer.port, password: String? = nil, database: Int = 0) -> RESPEndpoint {
        RESPEndpoint(
            host: "127.0.0.1", port: port ?? 1, username: nil, password: password, database: database,
            connectTimeout: .seconds(1), readTimeout: .seconds(2))
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
        let port = try RedisTestServer.freePort()
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
