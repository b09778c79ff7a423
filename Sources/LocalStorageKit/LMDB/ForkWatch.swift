import CLMDB
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Notices `fork()` without a system call per transaction: a child handler registered once with
/// `pthread_atfork` bumps a generation counter that each environment compares with the one it was
/// opened in.
enum ForkWatch {
    private static let counter: Atomic<Int> = {
        pthread_atfork(nil, nil) { ForkWatch.bump() }
        return Atomic<Int>(0)
    }()

    private static func bump() { counter.add(1, ordering: .relaxed) }

    /// How many times this process image has been forked into (0 in the original process).
    static var generation: Int { counter.load(ordering: .relaxed) }
}
