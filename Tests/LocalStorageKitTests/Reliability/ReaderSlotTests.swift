import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

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

    /// A store's environment of its own in a new directory (a `LocalStorage` on the same files in this process would
    /// be a second environment on them, which LMDB forbids).
    private func freshEnvironment() throws -> Environment {
        try Environment(directory: temporaryDirectory().path, mapSize: 1 << 20, maxMapSize: 1 << 20, durability: .none)
    }

    /// Runs `count` reads on threads of their own, all inside their transactions at once before any ends: the last
    /// to arrive lets the others go.
    private func readAtOnce(_ count: Int, in environment: Environment) async throws {
        let arrived = Atomic<Int>(0)
        let allInside = DispatchSemaphore(value: 0)
        let arrive: @Sendable () -> Bool = {
            if arrived.add(1, ordering: .sequentiallyConsistent).newValue == count {
                for _ in 1..<count { allInside.signal() }
                return true
            }
            return false
        }
        let failures = Mutex<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let finished = Atomic<Int>(0)
            for _ in 0..<count {
                Thread.detachNewThread {
                    do {
                        try environment.read { _ in
                            if !arrive() { allInside.wait() }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                        _ = arrive()
                    }
                    if finished.add(1, ordering: .sequentiallyConsistent).newValue == count { done.resume() }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
    }

    @Test func readsAtOnceLeaveNoMoreSlotsThanThePoolKeepsAndUnusedOnesAreGivenBack() async throws {
        let environment = try freshEnvironment()
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

    /// A process that stopped reading gives its pool's slots back at the expiry sweeps (review-107 B1: only reads
    /// trimmed the pool): what no read took between two sweeps goes.
    @Test func aPoolNoReadTakesFromIsGivenBackAtTheSweeps() async throws {
        let environment = try freshEnvironment()
        defer { environment.close() }
        try await readAtOnce(16, in: environment)
        #expect(try slotsHeld(environment) == ReadPool.capacity)
        environment.giveBackIdleReads()  // The burst took every handle: none was idle since the last trim.
        #expect(try slotsHeld(environment) == ReadPool.capacity)
        try environment.read { _ in }
        environment.giveBackIdleReads()  // One read took one handle: the others go.
        #expect(try slotsHeld(environment) == 1)
        environment.giveBackIdleReads()
        #expect(try slotsHeld(environment) == 0)
        try environment.read { _ in }
        #expect(try slotsHeld(environment) == 1)
    }

    /// The store's expiry sweep gives the idle pool back: with the sweep every second of a virtual clock, a store
    /// whose burst of reads is over keeps at most the one slot its sweeps read with, after a few sweeps.
    @Test func theExpirySweepGivesBackAnIdlePool() async throws {
        let clock = VirtualClock()
        let (storage, environment) = try await storeAfterABurstOfReads {
            $0.clock = clock
            $0.expirySweepInterval = .seconds(1)
        }
        #expect(try slotsHeld(environment) == ReadPool.capacity)
        for _ in 0..<3 {
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(1))
        }
        await clock.waitForSleepers(1)  // The third sweep is done: the sweeper sleeps again.
        #expect(try slotsHeld(environment) <= 1)
        withExtendedLifetime(storage) {}
    }

    /// Without the expiry sweep, the idle pool is given back all the same, on a timer of its own (review-108 R10: only
    /// reads trimmed it, so an idle process kept its slots): real time in an app, a virtual clock here.
    @Test func withoutTheSweepAnIdlePoolIsGivenBackAllTheSame() async throws {
        let timer = VirtualClock()
        let (storage, environment) = try await storeAfterABurstOfReads {
            $0.expirySweepInterval = nil
            $0.idleReadsClock = timer
        }
        #expect(try slotsHeld(environment) == ReadPool.capacity)
        // The first give-back finds every handle taken since the last trim (the burst); the second gives them back.
        for _ in 0..<2 {
            await timer.waitForSleepers(1)
            timer.advance(by: .seconds(60))
        }
        await timer.waitForSleepers(1)  // The second is done: the timer sleeps again.
        #expect(try slotsHeld(environment) == 0)
        withExtendedLifetime(storage) {}
    }

    /// A store configured by `configure` after a burst of reads that filled its pool, and its environment.
    private func storeAfterABurstOfReads(
        _ configure: (inout LocalStorageConfiguration) -> Void
    ) async throws -> (LocalStorage, Environment) {
        var configuration = diskConfiguration()
        configure(&configuration)
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "a", text: "1"))
        try await readAtOnce(16, in: storage.core.environment)
        return (storage, storage.core.environment)
    }
}
