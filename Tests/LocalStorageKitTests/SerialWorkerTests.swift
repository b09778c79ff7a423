import Foundation
import Synchronization
import Testing

@testable import LocalStorageKit

/// The one thread type the writer, the RESP connection and the subscriber share: jobs run in order in the
/// batches the owner takes; stopping runs or hands back what is queued; a stop from the thread itself does
/// not wait for itself.
@Suite struct SerialWorkerTests {
    @Test func jobsRunInOrderInTheBatchesTheOwnerTakesAndStopFinishesTheQueue() {
        let worker = SerialWorker<Int>(name: "test.worker")
        let batches = Mutex<[[Int]]>([])
        for job in 0..<5 { #expect(worker.submit(job)) }
        #expect(worker.queuedCount == 5)
        worker.start(
            take: { queue in
                let batch = Array(queue.prefix(2))
                queue.removeFirst(batch.count)
                return batch
            },
            run: { batch in batches.withLock { $0.append(batch) } })
        worker.stop()
        #expect(batches.withLock { $0 } == [[0, 1], [2, 3], [4]])
        #expect(!worker.submit(5))
        #expect(worker.isStopping)
        worker.stop()  // A second stop does nothing.
    }

    /// The thread is made at the first job: a worker that never gets one has none, and its stop runs `atEnd`
    /// on the stopping thread; jobs after the start run on the worker's one thread, in order.
    @Test func theThreadIsMadeAtTheFirstJob() {
        let here = pthread_self()
        let idle = SerialWorker<Int>(name: "test.idle")
        let idleEnd = Mutex<[pthread_t]>([])
        idle.start(
            take: { queue in [queue.removeFirst()] }, run: { _ in },
            atEnd: { idleEnd.withLock { $0.append(pthread_self()) } })
        idle.stop()
        #expect(idleEnd.withLock { $0 } == [here])

        let worker = SerialWorker<Int>(name: "test.worker")
        let ran = Mutex<[(job: Int, thread: pthread_t)]>([])
        let end = Mutex<[pthread_t]>([])
        worker.start(
            take: { queue in [queue.removeFirst()] },
            run: { batch in ran.withLock { $0 += batch.map { ($0, pthread_self()) } } },
            atEnd: { end.withLock { $0.append(pthread_self()) } })
        for job in 0..<3 { #expect(worker.submit(job)) }
        worker.stop()
        let threads = Set(ran.withLock { $0.map(\.thread) } + end.withLock { $0 })
        #expect(ran.withLock { $0.map(\.job) } == [0, 1, 2])
        #expect(threads.count == 1)
        #expect(!threads.contains(here))
    }

    /// The system shows a worker's thread under a short name that fits Linux's 15 bytes.
    @Test func theSystemNameOfAThreadFitsLinuxsLimit() {
        #expect(SerialWorker<Int>.systemName("LocalStorageKit.writer") == "lsk.writer")
        #expect(SerialWorker<Int>.systemName("LocalStorageKit.resp.subscriber-for-a-long-name") == "lsk.subscriber-")
        #expect(SerialWorker<Int>.systemName("é.ééééééééé").utf8.count <= 15)
        #if os(Linux)
        let worker = SerialWorker<Int>(name: "LocalStorageKit.writer")
        let seen = Mutex<String?>(nil)
        worker.start(
            take: { queue in [queue.removeFirst()] },
            run: { _ in
                let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
                seen.withLock { $0 = comm?.trimmingCharacters(in: .newlines) }
            })
        _ = worker.submit(1)
        worker.stop()
        #expect(seen.withLock { $0 } == "lsk.writer")
        #endif
    }

    @Test func aStopFromTheThreadItselfHandsBackWhatIsQueued() async {
        let worker = SerialWorker<Int>(name: "test.worker")
        let ran = Mutex<[Int]>([])
        let handedBack = Mutex<[Int]>([])
        for job in 0..<4 { _ = worker.submit(job) }
        await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
            worker.start(
                take: { queue in [queue.removeFirst()] },
                run: { batch in
                    ran.withLock { $0 += batch }
                    worker.stop()  // On the worker's own thread: must not wait for itself.
                },
                leftOver: { left in handedBack.withLock { $0 += left } },
                atEnd: { ended.resume() })
        }
        #expect(ran.withLock { $0 } == [0])
        #expect(handedBack.withLock { $0 } == [1, 2, 3])
    }

    /// A stop from the thread itself (the writer's owner released by a job) runs its last step after the jobs
    /// still queued: the store's environment was closed at once and those jobs ran on it.
    @Test func aStopFromTheThreadItselfRunsItsLastStepAfterTheQueuedJobs() async {
        let worker = SerialWorker<Int>(name: "test.worker")
        let events = Mutex<[String]>([])
        for job in 0..<3 { _ = worker.submit(job) }
        await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
            worker.start(
                take: { queue in [queue.removeFirst()] },
                run: { batch in
                    events.withLock { $0 += batch.map { "job \($0)" } }
                    if batch == [0] {
                        worker.stop {
                            events.withLock { $0.append("closed") }
                            ended.resume()
                        }
                    }
                })
        }
        #expect(events.withLock { $0 } == ["job 0", "job 1", "job 2", "closed"])
        let stoppedAgain = Mutex(false)
        worker.stop { stoppedAgain.withLock { $0 = true } }  // Later stops run their step at once.
        #expect(stoppedAgain.withLock { $0 })
    }

    @Test func aWaitOnTheOwnersStateEndsWhenItHoldsOrWhenTheWorkerStops() async {
        let worker = SerialWorker<Never>(name: "test.worker")
        let flag = Mutex(false)
        let outcomes = Mutex<[Bool]>([])
        let waiting = AsyncStream<Void>.makeStream()
        worker.start {
            waiting.continuation.yield()
            outcomes.withLock { $0.append(worker.wait { flag.withLock { $0 } }) }
            waiting.continuation.yield()
            outcomes.withLock { $0.append(worker.wait { false }) }
        }
        var events = waiting.stream.makeAsyncIterator()
        await events.next()
        worker.locked { flag.withLock { $0 = true } }
        worker.signal()
        await events.next()
        worker.stop()
        #expect(outcomes.withLock { $0 } == [true, false])
    }
}
