#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP socket to a server, non-blocking underneath, with a deadline on every connect, write and read.
///
/// Every system call's failure becomes a ``LocalStorageError/sharedTierUnavailable(_:)`` naming the call, the
/// endpoint and `strerror`. Used by one thread at a time (the connection that owns it).
final class RESPSocket {
    private(set) var descriptor: Int32
    let label: String

    private init(descriptor: Int32, label: String) {
        self.descriptor = descriptor
        self.label = label
    }

    deinit { close() }

    /// Closes the socket (again is harmless).
    func close() {
        if descriptor >= 0 {
            _ = closeDescriptor(descriptor)
            descriptor = -1
        }
    }

    private static var streamType: Int32 {
        #if canImport(Glibc)
        Int32(SOCK_STREAM.rawValue)
        #else
        SOCK_STREAM
        #endif
    }

    /// A child process the app starts does not inherit the connection.
    private static var closeOnExec: Int32 {
        #if canImport(Glibc)
        Int32(SOCK_CLOEXEC.rawValue)
        #else
        0
        #endif
    }

    /// How the reason of a failure to connect begins (``isConnectionFailure(_:)``).
    private static let connectingTo = "connecting to"

    /// Whether `error` is a failure to connect: no server answered.
    static func isConnectionFailure(_ error: LocalStorageError) -> Bool {
        guard case .sharedTierUnavailable(let reason) = error else { return false }
        return reason.hasPrefix(connectingTo + " ")
    }

    private static func failure(_ what: String, _ label: String, code: Int32 = errno) -> LocalStorageError {
        .sharedTierUnavailable("\(what) \(label) failed: \(String(cString: strerror(code))) (errno \(code))")
    }

    /// Connects to `host:port` within `timeout`, trying each address the name resolves to in turn, all within
    /// that one timeout (resolving a name goes by the system's resolver and its own timeouts).
    static func connect(host: String, port: Int, timeout: Duration) throws(LocalStorageError) -> RESPSocket {
        let deadline = ContinuousClock.now + timeout
        let label = "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = streamType
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .sharedTierUnavailable("resolving \(host) failed: \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var lastError = LocalStorageError.sharedTierUnavailable("no address for \(label)")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                throw .sharedTierUnavailable("\(connectingTo) \(label) timed out after \(timeout)")
            }
            let fd = socket(current.pointee.ai_family, streamType | closeOnExec, 0)
            guard fd >= 0 else {
                lastError = failure("socket() for", label)
                continue
            }
            let socket = RESPSocket(descriptor: fd, label: label)
            do {
                try socket.prepare()
                try socket.connect(to: current.pointee.ai_addr, length: current.pointee.ai_addrlen, timeout: left)
                return socket
            } catch {
                lastError = error
                socket.close()
            }
        }
        throw lastError
    }

    private func prepare() throws(LocalStorageError) {
        let flags = fcntl(descriptor, F_GETFL, 0)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw RESPSocket.failure("fcntl(O_NONBLOCK) on the socket to", label)
        }
        var one: Int32 = 1
        // Small commands and replies must not wait for Nagle's algorithm; a failure only costs latency.
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    private func connect(
        to address: UnsafeMutablePointer<sockaddr>?, length: socklen_t,
        timeout: Duration
    ) throws(LocalStorageError) {
        #if canImport(Glibc)
        let result = Glibc.connect(descriptor, address, length)
        #else
        let result = Darwin.connect(descriptor, address, length)
        #endif
        if result == 0 { return }
        guard errno == EINPROGRESS else { throw RESPSocket.failure(Self.connectingTo, label) }
        guard try wait(for: Int16(POLLOUT), until: .now + timeout) else {
            throw .sharedTierUnavailable("\(Self.connectingTo) \(label) timed out after \(timeout)")
        }
        var code: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &code, &size) == 0 else {
            throw RESPSocket.failure("getsockopt(SO_ERROR) after connecting to", label)
        }
        if code != 0 { throw RESPSocket.failure(Self.connectingTo, label, code: code) }
    }

    /// Whether the connection can no longer carry a request: closed, or readable while no request is out (the
    /// server closed it, say after its idle `timeout`, or sent something nobody asked for). Does not wait.
    var isStale: Bool {
        guard descriptor >= 0 else { return true }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&entry, 1, 0)
            if ready >= 0 { return ready > 0 }
            if errno != EINTR { return true }
        }
    }

    /// Waits until the socket is ready for `events`; false when `milliseconds` passed first.
    private func wait(for events: Int16, milliseconds: Int32) throws(LocalStorageError) -> Bool {
        try wait(for: events, until: .now + .milliseconds(milliseconds))
    }

    /// Waits until the socket is ready for `events`; false when `deadline` passed first. A signal that
    /// interrupts `poll` does not restart the wait's full length: the wait ends at the same deadline.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant) throws(LocalStorageError) -> Bool {
        var entry = pollfd(fd: descriptor, events: events, revents: 0)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return false }
            let ready = poll(&entry, 1, left.pollMilliseconds)
            if ready > 0 { return true }
            if ready == 0 { continue }  // The deadline is checked again: poll may wake a little early.
            if errno != EINTR { throw RESPSocket.failure("poll() on the socket to", label) }
        }
    }

    /// Writes every byte within `timeout` in all (not `timeout` for each part a slow reader takes).
    func write(_ bytes: [UInt8], timeout: Duration) throws(LocalStorageError) {
        guard descriptor >= 0 else { throw .sharedTierUnavailable("the connection to \(label) is closed") }
        let deadline = ContinuousClock.now + timeout
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { buffer -> Int in
                #if canImport(Glibc)
                send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                #else
                send(descriptor, buffer.baseAddress, buffer.count, 0)
                #endif
            }
            if written > 0 {
                offset += written
            } else if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                guard try wait(for: Int16(POLLOUT), until: deadline) else {
                    throw .sharedTierUnavailable("writing to \(label) timed out after \(timeout)")
                }
            } else {
                throw RESPSocket.failure("writing to", label)
            }
        }
    }

    /// Reads what is available into `parser`, waiting up to `milliseconds` for the first byte; false when
    /// nothing came in time.
    func read(into parser: inout RESPParser, milliseconds: Int32) throws(LocalStorageError) -> Bool {
        guard descriptor >= 0 else { throw .sharedTierUnavailable("the connection to \(label) is closed") }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                chunk.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                return true
            }
            if count == 0 { throw .sharedTierUnavailable("the server at \(label) closed the connection") }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { throw RESPSocket.failure("reading from", label) }
            guard try wait(for: Int16(POLLIN), milliseconds: milliseconds) else { return false }
        }
    }
}

private func closeDescriptor(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}
