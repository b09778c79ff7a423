import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The slots of the reader table (512, shared by every process on the store) that a process keeps when its reads
/// are done (review-105 F10: 32 for good, so 16 processes that had each once read 32 at a time held them all).
@Suite struct ReaderSlotTests {
    /// The slots of `environment`'s reader table this process holds.
    private func slotsHeld(_ environment: Environment) throws -> Int {
        try Environment.readerSlotOwners(environment.handle).filter { $0 == getpid() }.count
    }

    /// Runs `count` reads on threads of their own, all inside their transactions at once before any ends.
    private func readAtOnce(_ count: Int, in environment: Environment) async throws {
        let inside = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let finished = Atomic<Int>(0)
            for _ in 0..<count {
                Thread.detachNewThread {
                    do {
                        try environment.read { _ in
                            inside.add(1, ordering: .sequentiallyConsistent)
                            while inside.load(ordering: .sequentiallyConsistent) < count { usleep(1_000) }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                        inside.add(1, ordering: .sequentiallyConsistent)
                    }
                    if finished.add(1, ordering: .sequentiallyConsistent).newValue == count { done.resume() }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
    }

    @Test func readsAtOnceLeaveNoMoreSlotsThanThePoolKeepsAndUnusedOnesAreGivenBack() async throws {
        let directory = temporaryDirectory()
        let environment = try Environment(
            directory: directory.path, mapSize: 1 << 20, maxMapSize: 1 << 20, durability: .none)
        defer { environment.close() }
        try await readAtOnce(64, in: environment)
        let afterBurst = try slotsHeld(environment)
        #expect(afterBurst <= 16)
        #expect(afterBurst == ReadPool.capacity)
        // One read at a time, for two whiles of the pool: what it kept for the burst and no read needs goes back.
        #expect(ReadPool.trimInterval == 256)
        for _ in 0..<512 { try environment.read { _ in } }
        #expect(try slotsHeld(environment) == 1)
        // A burst again fills the pool again.
        try await readAtOnce(8, in: environment)
        #expect(try slotsHeld(environment) == min(8, ReadPool.capacity))
    }
}
