import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// A server that stops answering holds the command connection for one `readTimeout`, not one for each request
/// queued behind the one it left unanswered (/work/trial91.md #3: a read queued behind a request that timed out
/// was sent on a fresh connection and waited a second `readTimeout`).
@Suite struct RESPSilenceTests {
    /// A loopback server that accepts every connection, answers its first request (`SELECT`) and then reads
    /// without ever answering, until the client closes.
    final class SilentServer: @unchecked Sendable {
        let listener: Int32
        let port: Int
        private let accepted = Mutex(0)

        init() throws {
            let (listener, port) = try loopbackListener()
            self.listener = listener
            self.port = port
            Thread.detachNewThread { [self] in
                while true {
                    let connection = accept(listener, nil, nil)
                    guard connection >= 0 else { return }
                    accepted.withLock { $0 += 1 }
                    Thread.detachNewThread {
                        defer { close(connection) }
                        var buffer = [UInt8](repeating: 0, count: 4096)
                        guard recv(connection, &buffer, buffer.count, 0) > 0 else { return }  // SELECT
                        _ = Array("+OK\r\n".utf8).withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                        while recv(connection, &buffer, buffer.count, 0) > 0 {}
                    }
                }
            }
        }

        /// How many connections the server accepted.
        var connections: Int { accepted.withLock { $0 } }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    typealias Outcome = Result<[RESPValue], LocalStorageError>

    /// One request's outcome, nil until it comes.
    final class Reply: Sendable {
        private let outcome = Mutex<Outcome?>(nil)
        var value: Outcome? { outcome.withLock { $0 } }
        func set(_ value: Outcome) { outcome.withLock { $0 = value } }
    }

    /// Sends `commands` on `connection` and keeps the outcome in `reply`.
    static func send(_ commands: [[[UInt8]]], on connection: RESPConnection, into reply: Reply) -> Task<Void, Never> {
        Task {
            do throws(LocalStorageError) {
                reply.set(.success(try await connection.send(commands)))
            } catch {
                reply.set(.failure(error))
            }
        }
    }

    /// Moves `clock` by `duration` (past the request's timeout) and returns the failure the request ended with; nil,
    /// recorded as an issue, when it did not fail.
    static func failure(
        of task: Task<Void, Never>, _ reply: Reply, after duration: Duration, of clock: VirtualClock
    ) async -> LocalStorageError? {
        clock.advance(by: duration)
        await task.value
        guard case .failure(let error)? = reply.value else {
            Issue.record("the unanswered request did not fail: \(String(describing: reply.value))")
            return nil
        }
        return error
    }

    @Test(.timeLimit(.minutes(5))) func requestsQueuedBehindAnUnansweredOneFailUnsent() async throws {
        let server = try SilentServer()
        defer { server.stop() }
        let clock = VirtualClock()
        let endpoint = RESPEndpoint(
            host: "127.0.0.1", port: server.port, username: nil, password: nil, database: 0,
            connectTimeout: .seconds(60), readTimeout: .seconds(10))
        let connection = RESPConnection(
            endpoint: endpoint, reconnectDelay: .milliseconds(100), maxReconnectDelay: .seconds(1), clock: clock,
            name: "test.silence")
        defer { connection.stop() }

        let first = Reply()
        let firstTask = Self.send([.command("PING")], on: connection, into: first)
        try await waitUntil("the first request is out") { connection.requestsAwaitingReply == 1 }
        let queued = Reply()
        let queuedTask = Self.send([.command("GET", "a")], on: connection, into: queued)
        try await waitUntil("the second request is queued") { connection.requestsQueued == 1 }
        guard let error = await Self.failure(of: firstTask, first, after: .seconds(11), of: clock) else { return }
        #expect(RESPConnection.mayHaveBeenApplied(error), "\(error)")

        // The request behind it fails unsent at once; before, it went out on a new connection and waited there.
        try await waitUntil("the queued request ends or goes out") {
            queued.value != nil || connection.requestsAwaitingReply > 0
        }
        guard case .failure(let behind)? = queued.value else {
            Issue.record("the queued request was sent (\(connection.requestsAwaitingReply) awaiting a reply)")
            return
        }
        await queuedTask.value
        #expect(RESPConnection.wasQueuedBehindSilence(behind), "\(behind)")
        #expect(!RESPConnection.mayHaveBeenApplied(behind), "\(behind)")
        #expect("\(behind)".contains("127.0.0.1:\(server.port)/0 did not reply"), "\(behind)")
        #expect(server.connections == 1)

        // A request queued after the failure gets a round trip of its own, on a new connection.
        let later = Reply()
        let laterTask = Self.send([.command("PING")], on: connection, into: later)
        try await waitUntil("the later request is out") { connection.requestsAwaitingReply == 1 }
        #expect(server.connections == 2)
        guard let laterError = await Self.failure(of: laterTask, later, after: .seconds(11), of: clock) else { return }
        #expect(RESPConnection.mayHaveBeenApplied(laterError), "\(laterError)")
    }

    /// A loopback server that answers `SELECT`, then answers each later request with `+PONG` and signals
    /// `answered` once the answer is written (on loopback it is then in the client's socket).
    final class AnsweringServer: @unchecked Sendable {
        let listener: Int32
        let port: Int
        let answered = DispatchSemaphore(value: 0)

        init() throws {
            let (listener, port) = try loopbackListener()
            self.listener = listener
            self.port = port
            Thread.detachNewThread { [answered] in
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                defer { close(connection) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                func put(_ text: String) {
                    _ = Array(text.utf8).withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                }
                guard recv(connection, &buffer, buffer.count, 0) > 0 else { return }  // SELECT
                put("+OK\r\n")
                while recv(connection, &buffer, buffer.count, 0) > 0 {
                    put("+PONG\r\n")
                    answered.signal()
                }
            }
        }

        deinit {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    /// A reply that came while the reading thread was not running (a loaded machine) is read, though the
    /// deadline passed meanwhile: the server answered. Before, the deadline was looked at first, and the server
    /// was called silent with its reply waiting in the socket.
    @Test(.timeLimit(.minutes(5))) func aReplyWaitingWhenTheDeadlinePassedIsRead() throws {
        let server = try AnsweringServer()
        let clock = VirtualClock()
        let endpoint = RESPEndpoint(
            host: "127.0.0.1", port: server.port, username: nil, password: nil, database: 0,
            connectTimeout: .seconds(60), readTimeout: .seconds(1))
        let session = try RESPSession(endpoint: endpoint, clock: clock)
        defer { session.close() }
        try session.write([.command("PING")])
        server.answered.wait()
        clock.advance(by: .seconds(2))
        let replies = try session.replies(count: 1, timeout: .seconds(1), deadline: .seconds(1))
        #expect(replies == [.simple("PONG")])
        // Nothing waiting when the deadline has passed: the server is silent.
        #expect(throws: LocalStorageError.self) {
            try session.replies(count: 1, timeout: .seconds(1), deadline: .seconds(1))
        }
    }
}
