import CLMDB
import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Testing) @testable import LocalStorageKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Load: 500 reader threads and 8 writer tasks for a bounded time on a 64 KiB map that must grow.
/// `LOAD_SECONDS` sets the duration (the suite's default is short; `scripts/crash-test.sh` runs longer).
@Suite(.serialized)
struct LoadTests {
    /// Counters shared by the readers and writers.
    final class Tally: Sendable {
        let reads = Atomic<Int>(0)
        let apiReads = Atomic<Int>(0)
        let errors = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let running = Atomic<Int>(0)
        /// Read transactions open right now, and the most seen at once.
        let inside = Atomic<Int>(0)
        let peak = Atomic<Int>(0)

        func fail(_ error: any Error) {
            errors.withLock { if $0.count < 20 { $0.append("\(error)") } }
        }
    }

    @Test func fiveHundredReadersAndEightWritersOnAGrowingMap() async throws {
        let seconds = ProcessInfo.processInfo.environment["LOAD_SECONDS"].flatMap { Double($0) } ?? 1.5
        var configuration = diskConfiguration()
        configuration.mapSize = 64 << 10
        configuration.maxMapSize = 1 << 30
        configuration.growsMapFromMapSize = true
        let storage = try LocalStorage(configuration: configuration)
        let core = storage.core
        let initialMapSize = core.environment.currentMapSize
        let schema = try await core.schema(for: StressRecord.self)
        let tally = Tally()

        // 500 threads, each in and out of read transactions: up to 500 reader slots
        // in use at once (the table has 512), while the writer grows the map under them.
        let readerCount = 500
        let done = DispatchGroup()
        for reader in 0..<readerCount {
            done.enter()
            tally.running.add(1, ordering: .relaxed)
            let thread = Thread {
                defer {
                    tally.running.subtract(1, ordering: .relaxed)
                    done.leave()
                }
                var generator = SplitMix64(seed: UInt64(reader))
                // At most 200 transactions each at the default 1.5 s (about five seconds; more with a longer
                // LOAD_SECONDS): in a parallel run of the whole suite the writers take many times longer than
                // alone, and the readers' CPU time grew with them.
                var transactions = 0
                while !tally.stop.load(ordering: .relaxed) && transactions < max(200, Int(seconds * 133)) {
                    transactions += 1
                    do {
                        let n = Int.random(in: 0..<2000, using: &generator)
                        let key = Array("w\(n % 8)-\(n / 8)".utf8)
                        try core.environment.read { txn in
                            let inside = tally.inside.add(1, ordering: .relaxed).newValue
                            defer { tally.inside.subtract(1, ordering: .relaxed) }
                            if inside > tally.peak.load(ordering: .relaxed) {
                                tally.peak.store(inside, ordering: .relaxed)
                            }
                            if let bytes = try txn.get(schema.records, key: key) {
                                _ = try RecordDecoding.decode(StressRecord.self, view: RecordView(bytes), id: "")
                            }
                            _ = try txn.entryCount(schema.records)
                            // Hold the transaction a moment, like a long scan: hundreds overlap. (Held longer and
                            // paused longer than a millisecond: 500 threads waking thousands of times a second
                            // slowed every other test of a parallel run, and this one's writers with them.)
                            usleep(UInt32.random(in: 5_000...20_000, using: &generator))
                        }
                        tally.reads.add(1, ordering: .relaxed)
                    } catch {
                        tally.fail(error)
                    }
                    usleep(UInt32.random(in: 2_000...10_000, using: &generator))
                }
            }
            thread.stackSize = 256 << 10
            thread.start()
        }

        // Public-API readers alongside, on the cooperative pool.
        let apiReaders = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for reader in 0..<8 {
                    group.addTask {
                        while !tally.stop.load(ordering: .relaxed) {
                            do {
                                _ = try await storage.fetch(StressRecord.self, id: "w\(reader)-0")
                                _ = try await storage.count(StressRecord.self, matching: [.equals("group", "g1")])
                                _ = try await storage.fetch(
                                    StressRecord.self, matching: [.atLeast("sequence", 10)],
                                    orderedBy: .descending("sequence"),
                                    options: FetchOptions(limit: 5))
                                tally.apiReads.add(1, ordering: .relaxed)
                            } catch {
                                tally.fail(error)
                            }
                            await Task.yield()
                        }
                    }
                }
                try await group.waitForAll()
            }
        }

        // 8 writers, each saving its own records.
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let saved = try await withThrowingTaskGroup(of: Int.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    var count = 0
                    // Until the time is up, and at least 100 records each (enough to outgrow 64 KiB when a
                    // sanitizer slows everything down).
                    while ContinuousClock.now < deadline || count < 100 {
                        // Alternately one record and a batch of ten, so that the map grows under load.
                        let size = count % 2 == 0 ? 1 : 10
                        let records = (count..<count + size).map { n in
                            StressRecord(
                                id: "w\(writer)-\(n)", group: "g\(n % 4)", sequence: n,
                                blob: String(repeating: "w", count: 200 + n % 300))
                        }
                        do {
                            if size == 1 {
                                try await storage.save(records[0])
                            } else {
                                try await storage.save(contentsOf: records)
                            }
                            count += size
                        } catch {
                            tally.fail(error)
                            return count
                        }
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        tally.stop.store(true, ordering: .relaxed)
        try await apiReaders.value
        await withCheckedContinuation { continuation in
            done.notify(queue: .global()) { continuation.resume() }
        }

        let errors = tally.errors.withLock { $0 }
        #expect(errors.isEmpty, "\(errors)")
        #expect(try await storage.count(StressRecord.self) == saved)
        #expect(try await storage.fetch(StressRecord.self).count == saved)
        var byGroup = 0
        for group in 0..<4 {
            byGroup += try await storage.count(StressRecord.self, matching: [.equals("group", "g\(group)")])
        }
        #expect(byGroup == saved)
        #expect(core.environment.currentMapSize > initialMapSize, "the map should have grown")
        #expect(try await verifyProblems(storage).isEmpty)
        reportFigure(
            "load seconds=\(seconds) readerThreads=\(readerCount) apiReaders=8 writers=8 saves=\(saved) "
                + "threadReads=\(tally.reads.load(ordering: .relaxed)) "
                + "apiReads=\(tally.apiReads.load(ordering: .relaxed)) errors=\(errors.count) "
                + "peakConcurrentReadTransactions=\(tally.peak.load(ordering: .relaxed)) "
                + "map=\(initialMapSize)->\(core.environment.currentMapSize)")
    }
}
