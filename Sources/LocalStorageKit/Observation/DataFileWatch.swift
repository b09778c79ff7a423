import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Wakes the follower of other processes' commits (``LiveQueryCenter``) as soon as the store's data file is
/// written, instead of at its next poll: LMDB writes every commit's pages and meta page with `pwrite`, which
/// the kernel reports as `IN_MODIFY` to an inotify watch on `data.mdb`, whichever process wrote.
///
/// A thread of its own waits in `poll(2)` on the inotify descriptor and a pipe that ``stop()`` and ``wake()`` write
/// to; each wake drains the pending events (one read gives many) and calls `onChange` once. Every
/// ``idleCheckInterval`` without a wake, and after each `onChange`, it asks `endsIdle` whether to end (the follower
/// keeps it a while after its last observer, for the next). The timed poll goes on
/// beside it, for file systems that do not report writes (NFS) and platforms without inotify, where
/// ``start(path:onChange:endsIdle:)`` returns nil.
final class DataFileWatch: Sendable {
    #if canImport(Glibc)
    private let inotify: Int32
    private let controlPipe: (read: Int32, write: Int32)
    /// Whether the thread has ended and closed the descriptors: ``stop()`` writes to the pipe only before, under
    /// this lock, so it never writes to a descriptor number that was closed (and maybe reused).
    private let ended = Mutex(false)
    /// The fork generation it was started in: a child after `fork()` shares the pipe, and must not stop or wake the
    /// parent's thread through it.
    private let forkGeneration = ForkWatch.generation
    #endif

    #if canImport(Glibc)
    private init(inotify: Int32, controlPipe: (read: Int32, write: Int32)) {
        self.inotify = inotify
        self.controlPipe = controlPipe
    }
    #endif

    /// Whether this platform and process can watch files (inotify, below the per-user limit of instances).
    static var isAvailable: Bool {
        #if canImport(Glibc)
        let inotify = inotify_init1(Int32(IN_CLOEXEC))
        guard inotify >= 0 else { return false }
        close(inotify)
        return true
        #else
        return false
        #endif
    }

    /// How long the thread waits without a wake before it asks whether to end.
    static let idleCheckInterval = Duration.seconds(1)

    /// Watches the file at `path` and calls `onChange` (on the watch's thread) once as it starts (for writes
    /// before the watch existed), after each burst of writes to it and at each ``wake()``; nil when the platform or
    /// the file system cannot watch it (the timed poll still runs). The thread ends at ``stop()``, or when
    /// `endsIdle` says so.
    static func start(
        path: String, onChange: @escaping @Sendable () -> Void,
        endsIdle: @escaping @Sendable (DataFileWatch) -> Bool
    ) -> DataFileWatch? {
        #if canImport(Glibc)
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else { return nil }
        guard inotify_add_watch(inotify, path, UInt32(IN_MODIFY)) >= 0 else {
            close(inotify)
            return nil
        }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            close(inotify)
            return nil
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            // A full pipe already holds a wake for the thread: a write must not block (it runs under the follower's
            // lock), and the thread reads every byte waiting at once.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        let watch = DataFileWatch(inotify: inotify, controlPipe: (fds[0], fds[1]))
        let thread = Thread {
            onChange()
            watch.run(onChange: onChange, endsIdle: endsIdle)
        }
        thread.name = "LocalStorageKit data file watch"
        // Subscribers run on this thread (live queries' reruns are started, change streams queue ids): the stack of a
        // thread the system would make (8 MiB is virtual until used).
        thread.stackSize = 8 << 20
        thread.start()
        return watch
        #else
        return nil
        #endif
    }

    /// Whether the thread has ended and closed its descriptors (tests).
    var hasEnded: Bool {
        #if canImport(Glibc)
        ended.withLock { $0 }
        #else
        true
        #endif
    }

    /// Ends the thread without waiting for it (it may be in `onChange`, which takes locks the caller holds);
    /// the thread closes the descriptors as it ends.
    func stop() { send(Self.stopByte) }

    /// Makes the thread call `onChange` once, as if the file had been written; false when the thread has ended.
    @discardableResult
    func wake() -> Bool { send(Self.wakeByte) }

    private static let stopByte: UInt8 = 1
    private static let wakeByte: UInt8 = 2

    /// Writes `byte` to the thread's pipe unless it has ended (or this is a child after `fork()`); whether it had not.
    @discardableResult
    private func send(_ byte: UInt8) -> Bool {
        #if canImport(Glibc)
        guard ForkWatch.generation == forkGeneration else { return false }
        return ended.withLock { ended in
            guard !ended else { return false }
            var byte = byte
            while write(controlPipe.write, &byte, 1) < 0 && errno == EINTR {}
            return true
        }
        #else
        return false
        #endif
    }

    #if canImport(Glibc)
    private func run(onChange: @Sendable () -> Void, endsIdle: @Sendable (DataFileWatch) -> Bool) {
        defer {
            ended.withLock { ended in
                ended = true
                close(inotify)
                close(controlPipe.read)
                close(controlPipe.write)
            }
        }
        var entries = [
            pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
            pollfd(fd: controlPipe.read, events: Int16(POLLIN), revents: 0),
        ]
        var buffer = [UInt8](repeating: 0, count: 4096)
        let idleCheck = Int32(Self.idleCheckInterval.components.seconds * 1000)
        while true {
            entries[0].revents = 0
            entries[1].revents = 0
            let ready = poll(&entries, 2, idleCheck)
            if ready < 0 {
                if errno == EINTR { continue }
                return  // The watch ends; the timed poll goes on.
            }
            if ready == 0 {
                if endsIdle(self) { return }
                continue
            }
            var woken = false
            if entries[1].revents != 0 {
                // Every byte waiting: wakes come as one, a stop among them ends the thread.
                let count = buffer.withUnsafeMutableBytes { read(controlPipe.read, $0.baseAddress, $0.count) }
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                // A stop, or the pipe's end (nothing can write to it any more).
                guard count > 0, !buffer[..<count].contains(Self.stopByte) else { return }
                woken = true
            }
            if entries[0].revents != 0 && entries[0].revents & Int16(POLLIN) == 0 {
                return  // POLLERR / POLLHUP: nothing more will come.
            }
            // Drain every event queued so far: one wake for a burst of writes.
            var drained = false
            while entries[0].revents & Int16(POLLIN) != 0 {
                let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
                if count > 0 {
                    drained = true
                    continue
                }
                if count < 0 && errno == EINTR { continue }
                break
            }
            if drained || woken {
                onChange()
                if endsIdle(self) { return }
            }
        }
    }
    #endif
}
