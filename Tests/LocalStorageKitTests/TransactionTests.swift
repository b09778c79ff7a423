import Foundation
import LocalStorageTestSupport
import Synchronization
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

struct Account: LocalStorageIndexed, Equatable {
    let id: String
    var balance: Int
    static var storageIndexes: [StorageIndex<Account>] { [.number("balance") { $0.balance }] }
}

enum ShopError: Error, Equatable {
    case soldOut(sku: String)
}

/// `write { tx in }` and `read { tx in }`: atomic, exactly once, one snapshot, own errors unchanged.
@Suite struct TransactionTests {
    @Test func aBodyThatThrowsAfterSeveralWritesLeavesNothing() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Note(id: "kept", text: "before"))
        try await storage.save(Product.sample(1))
        let commits = storage.commitCount
        await #expect(throws: ShopError.soldOut(sku: "sku_9")) {
            try await storage.write { tx in
                try tx.save(Note(id: "new", text: "x"))
                try tx.save(Note(id: "kept", text: "changed"))
                try tx.delete(Product.self, id: "sku_1")
                try tx.save(contentsOf: (2..<5).map(Product.sample))
                #expect(try tx.fetch(Note.self, id: "kept")?.text == "changed")  // it sees its own writes
                #expect(try tx.count(Product.self, matching: [.atLeast("price", 0)]) == 3)
                // The `options:` forms of `LocalStorage`'s count and page take the same arguments here.
                #expect(try tx.count(Product.self, matching: [.atLeast("price", 0)], options: FetchOptions()) == 3)
                let page = try tx.page(
                    Product.self, matching: [.atLeast("price", 0)], orderedBy: .descending("price"), page: 1,
                    pageSize: 2, options: FetchOptions(scope: .local))
                #expect(page.items.map(\.id) == ["sku_4", "sku_3"] && page.totalCount == 3)
                throw ShopError.soldOut(sku: "sku_9")
            }
        }
        #expect(try await storage.fetch(Note.self, id: "kept")?.text == "before")
        #expect(try await storage.fetch(Note.self, id: "new") == nil)
        #expect(try await storage.fetch(Product.self).map(\.id) == ["sku_1"])
        #expect(try await storage.count(Product.self, matching: [.atLeast("price", 0)]) == 1)
        #expect(storage.commitCount - commits <= 1)
    }

    /// A batch that fails part way, whose error the body catches, leaves nothing of itself; the body's other
    /// writes commit. (A batch with a record stored at a newer version in its middle used to leave the records
    /// before it saved without their index, update-time and signature entries.)
    @Test func aBatchWhoseErrorTheBodyCatchesLeavesNothingOfItself() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(Sheet3(id: "b", title: "newer"))
        try await storage.save(Sheet2(id: "kept", title: "old"))
        let caught = try await storage.write { tx -> LocalStorageError? in
            try tx.save(Sheet2(id: "before", title: "x"))
            var caught: LocalStorageError?
            do {
                try tx.save(contentsOf: ["a", "b", "c"].map { Sheet2(id: $0, title: "x") })
            } catch let error as LocalStorageError {
                caught = error
            }
            // The failed batch is gone from the transaction's own view too.
            #expect(try tx.fetch(Sheet2.self, id: "a") == nil)
            #expect(try tx.count(Sheet2.self, matching: [.equals("title", "x")]) == 1)
            try tx.deleteAll(Note.self)
            try tx.save(Sheet2(id: "after", title: "x"))
            return caught
        }
        guard case .decodingFailed(let reason) = caught else {
            Issue.record("expected decodingFailed, got \(String(describing: caught))")
            return
        }
        #expect(reason.contains("newer"), "\(reason)")
        for id in ["a", "c"] { #expect(try await storage.fetch(Sheet2.self, id: id) == nil) }
        #expect(try await storage.fetch(Sheet3.self, id: "b")?.title == "newer")
        #expect(try await storage.count(Sheet2.self) == 4)  // before, after, kept, and b (written by the newer app)
        #expect(
            try await storage.fetch(Sheet2.self, matching: [.equals("title", "x")]).map(\.id) == ["after", "before"])
        let report = try await StoreMaintenance(directory: storage.core.directory).verify()
        #expect(report.isClean, "\(report.problems)")
    }

    @Test func aWriteIsAtomicAcrossTypesAndReturnsItsResult() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(Account(id: "stock", balance: 3))
        let changes = storage.changes(of: Note.self)
        let left = try await storage.write { tx -> Int in
            guard var stock = try tx.fetch(Account.self, id: "stock") else { throw ShopError.soldOut(sku: "stock") }
            stock.balance -= 1
            try tx.save(stock)
            try tx.save(Note(id: "order", text: "one"), expiration: .days(30))
            try tx.save(Note(id: "temp", text: "t"))
            try tx.delete(Note.self, id: "temp")
            try tx.setExpiration(Note.self, id: "order", .days(1))
            return stock.balance
        }
        #expect(left == 2)
        #expect(try await storage.fetch(Account.self, id: "stock")?.balance == 2)
        let meta = try #require(try await storage.metadata(Note.self, id: "order"))
        #expect(try #require(meta.expiresAt).timeIntervalSinceNow < 86_401)
        // The transaction's events arrive after its commit, in order.
        var events: [String] = []
        for await change in changes {
            switch change {
            case .inserted(let note): events.append("+\(note.id)")
            case .updated(let note): events.append("~\(note.id)")
            case .deleted(let id): events.append("-\(id)")
            case .expired(let id): events.append("x\(id)")
            case .cleared: events.append("clear")
            }
            if events.count == 3 { break }
        }
        #expect(events == ["+order", "+temp", "-temp"])
    }

    @Test func aLiveQuerySeesTheWholeTransactionAtOnce() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        var results = storage.updates(of: Note.self).makeAsyncIterator()
        #expect(try await results.next()?.isEmpty == true)
        try await storage.write { tx in
            for n in 0..<50 { try tx.save(Note(id: "n\(n)", text: "\(n)")) }
        }
        // The first result after the commit already holds all 50: no partial state is ever shown.
        #expect(try await results.next()?.count == 50)
    }

    @Test func aReadSeesOneSnapshotWhileWritesCommit() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<10).map { Note(id: "n\($0)", text: "v0") })
        // The read's body waits, synchronously, for commits: it blocks its thread. The body and the writes
        // each run on a thread of their own, so neither holds, nor waits for, the cooperative pool's few
        // threads (which other tests may hold on a loaded machine).
        let readerThread = ThreadExecutor(name: "reader")
        let writerThread = ThreadExecutor(name: "writer")
        defer {
            readerThread.stop()
            writerThread.stop()
        }
        let commits = storage.commitCount
        let writer = Task(executorPreference: writerThread) {
            for round in 1...40 {
                try await storage.save(contentsOf: (0..<10).map { Note(id: "n\($0)", text: "v\(round)") })
                try await storage.save(Note(id: "extra\(round)", text: "x"))
            }
        }
        let reader = Task(executorPreference: readerThread) {
            try await storage.read { tx in
                let first = try tx.fetch(Note.self)
                // Writes commit meanwhile: wait for a few (an event; the deadline is only a safety net).
                let deadline = ContinuousClock.now + .seconds(120)
                while storage.commitCount < commits + 5 && ContinuousClock.now < deadline {
                    Thread.sleep(forTimeInterval: 0.001)
                }
                return (first, try tx.fetch(Note.self), try tx.count(Note.self), storage.commitCount - commits)
            }
        }
        let (first, second, count, committed) = try await reader.value
        try await writer.value
        #expect(committed >= 5)
        #expect(first == second)
        #expect(count == first.count)
        // Each batch of n0…n9 commits whole: the snapshot holds one version of all ten (the extras, saved
        // alone between batches, may be in it too).
        #expect(Set(first.filter { $0.id.hasPrefix("n") }.map(\.text)).count == 1)
        #expect(first.filter { $0.id.hasPrefix("n") }.count == 10)
        #expect(try await storage.count(Note.self) == 50)
    }

    @Test func aReadRegistersReindexesAndAnswersExactly() async throws {
        typealias AB = Evolving<NamePlain, DeclarationAB>
        typealias BC = Evolving<NamePlain, DeclarationBC>
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (0..<5).map { (n: Int) in AB(id: "r\(n)", a: n, b: "x", c: n) })
        // BC was never used in this process, and every record was indexed with AB's declaration.
        let (count, ids) = try await storage.read { tx in
            (
                try tx.count(BC.self, matching: [.atLeast("c", 2)]),
                try tx.fetch(BC.self, matching: [.equals("b", "x")], orderedBy: .descending("c")).map(\.id)
            )
        }
        #expect(count == 3)
        #expect(ids == ["r4", "r3", "r2", "r1", "r0"])
    }

    @Test func aTransactionUsedOutsideItsClosureThrows() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let leaked = try await storage.read { $0 }
        #expect(throws: LocalStorageError.self) { try leaked.fetch(Note.self, id: "n") }
    }

    @Test func aBodyRunsOnceWhenAPeerOfItsCommitFails() async throws {
        var configuration = diskConfiguration()
        configuration.mapSize = 1 << 20
        configuration.maxMapSize = 1 << 20
        let storage = try LocalStorage(configuration: configuration)
        let calls = CallCounter()
        let hold = try await WriterHold(storage)
        let tooBig = Task { try await storage.save(Note(id: "big", text: String(repeating: "x", count: 2 << 20))) }
        try await waitUntil("the save is queued") { storage.core.writer.queuedCount == 1 }
        let body = Task {
            try await storage.write { tx in
                calls.increment()
                try tx.save(Note(id: "mine", text: "kept"))
            }
        }
        try await waitUntil("the write is queued") { storage.core.writer.queuedCount == 2 }
        let failing = Task {
            try await storage.write { tx in
                try tx.save(Note(id: "theirs", text: "lost"))
                throw ShopError.soldOut(sku: "peer")
            }
        }
        try await waitUntil("the failing write is queued") { storage.core.writer.queuedCount == 3 }
        try await hold.release()
        await #expect(throws: LocalStorageError.storageFull) { try await tooBig.value }
        await #expect(throws: ShopError.soldOut(sku: "peer")) { try await failing.value }
        try await body.value
        #expect(calls.value == 1)
        #expect(try await storage.fetch(Note.self, id: "mine")?.text == "kept")
        #expect(try await storage.fetch(Note.self, id: "theirs") == nil)
    }

    @Test func concurrentWritesAndSavesShareCommits() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration(durability: .full))
        try await storage.save(Note(id: "warm-up", text: ""))  // the type is registered
        let commits = storage.commitCount
        // All 400 wait behind a held writer, however the machine schedules the tasks that send them.
        let hold = try await WriterHold(storage)
        let requests = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<200 {
                    group.addTask { try await storage.write { tx in try tx.save(Note(id: "w\(n)", text: "w")) } }
                    group.addTask { try await storage.save(Note(id: "s\(n)", text: "s")) }
                }
                try await group.waitForAll()
            }
        }
        try await waitUntil("400 requests are queued") { storage.core.writer.queuedCount >= 400 }
        try await hold.release()
        try await requests.value
        #expect(try await storage.count(Note.self) == 401)
        // One commit each would be 400; group commit shares them (two kinds a drain at most).
        #expect(storage.commitCount - commits < 200)
    }

    /// Many concurrent transfers between accounts, some refused; readers summing every balance in one
    /// snapshot never see money appear or vanish.
    @Test func theBankNeverLosesMoney() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let accounts = 20
        try await storage.save(contentsOf: (0..<accounts).map { Account(id: "a\($0)", balance: 100) })
        let refused = CallCounter()
        let sums = Totals()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var random = SplitMix64(seed: UInt64(worker) &+ 0xBA4C)
                    for _ in 0..<60 {
                        let first = random.below(accounts)
                        let from = "a\(first)"
                        let to = "a\((first + 1 + random.below(accounts - 1)) % accounts)"  // never `from`
                        let amount = 1 + random.below(80)
                        do {
                            try await storage.write { tx in
                                guard var source = try tx.fetch(Account.self, id: from),
                                    var target = try tx.fetch(Account.self, id: to)
                                else {
                                    throw ShopError.soldOut(sku: "missing")
                                }
                                source.balance -= amount
                                try tx.save(source)
                                target.balance += amount
                                try tx.save(target)
                                if source.balance < 0 { throw ShopError.soldOut(sku: from) }  // after writing
                            }
                        } catch ShopError.soldOut {
                            refused.increment()
                        }
                    }
                }
            }
            for _ in 0..<3 {
                group.addTask {
                    for _ in 0..<100 {
                        // Account by account, so that only one snapshot for the whole body adds up.
                        let total = try await storage.read { tx in
                            try (0..<accounts).reduce(0) { sum, n in
                                sum + (try tx.fetch(Account.self, id: "a\(n)")?.balance ?? 0)
                            }
                        }
                        sums.append(total)
                    }
                }
            }
            try await group.waitForAll()
        }
        let totals = sums.values
        #expect(totals.count == 300)
        #expect(totals.allSatisfy { $0 == 100 * accounts }, "\(Set(totals))")
        let final = try await storage.fetch(Account.self)
        #expect(final.reduce(0) { $0 + $1.balance } == 100 * accounts)
        #expect(final.allSatisfy { $0.balance >= 0 })
        #expect(refused.value > 0 && refused.value < 480)
        // The balance index agrees with the payloads after all of it.
        #expect(try await storage.count(Account.self, matching: [.atLeast("balance", 0)]) == accounts)
    }

    @Test func aProcessKilledInsideALongTransactionLosesAllOfItAndNothingElse() async throws {
        let directory = temporaryDirectory()
        let child = try HelperProcess(["long-write", directory.path])
        try await child.waitForLine("inside") { $0 == "inside" }
        await child.kill()
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try await storage.fetch(StressRecord.self).map(\.id) == ["before"])
            #expect(try await storage.count(StressRecord.self, matching: [.atLeast("sequence", 0)]) == 1)
            #expect(try await verifyProblems(storage) == [])
        }
    }
}

/// Sums collected from several tasks.
final class Totals: Sendable {
    private let state = Mutex<[Int]>([])
    func append(_ total: Int) { state.withLock { $0.append(total) } }
    var values: [Int] { state.withLock { $0 } }
}

extension TransactionTests {
    /// Whether `body` throws `invalidQuery`.
    private func throwsInvalidQuery(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            return false
        } catch LocalStorageError.invalidQuery {
            return true
        } catch {
            return false
        }
    }

    /// A transaction's reads take `scope: .shared` as the store's own reads do on a store without a shared tier:
    /// they throw `invalidQuery` (they gave this store's rows: review-83 #5), and `.local` reads as before.
    @Test func aTransactionsReadsRefuseTheSharedScopeAsTheStoreDoes() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        try await storage.save(contentsOf: (1...4).map { Product.sample($0) })
        let shared = FetchOptions(scope: .shared)
        let matching: [StorageIndexFilter] = [.atLeast("price", 0)]
        await #expect(throws: LocalStorageError.self) { try await storage.fetch(Product.self, options: shared) }
        let refusals = try await storage.read { tx in
            [
                throwsInvalidQuery { _ = try tx.fetch(Product.self, options: shared) },
                throwsInvalidQuery { _ = try tx.fetch(Product.self, matching: matching, options: shared) },
                throwsInvalidQuery { _ = try tx.count(Product.self, matching: matching, options: shared) },
                throwsInvalidQuery {
                    _ = try tx.page(Product.self, matching: matching, page: 1, pageSize: 2, options: shared)
                },
            ]
        }
        #expect(refusals == [true, true, true, true])
        let local = FetchOptions(scope: .local)
        let counts = try await storage.write { tx in
            [
                try tx.fetch(Product.self, options: local).count,
                try tx.fetch(Product.self, matching: matching, options: local).count,
                try tx.count(Product.self, matching: matching, options: local),
                try tx.page(Product.self, matching: matching, page: 1, pageSize: 10, options: local).items.count,
            ]
        }
        #expect(counts == [4, 4, 4, 4])
    }
}
