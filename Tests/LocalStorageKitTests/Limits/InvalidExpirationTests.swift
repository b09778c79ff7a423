import Foundation
import Testing

@_spi(Testing) @testable import LocalStorageKit

/// Expirations that are not a moment the store can keep throw `invalidExpiration` and write nothing,
/// through every call that takes one.
@Suite struct InvalidExpirationTests {
    static let impossible: [CacheExpiration] = [
        .seconds(.nan), .seconds(.infinity), .seconds(-.infinity), .seconds(-1e300), .seconds(1e300),
        .days(.greatestFiniteMagnitude), .hours(-1e12), .minutes(.nan), .days(1e6),
        .date(.distantFuture), .date(.distantPast), .date(Date(timeIntervalSince1970: -1e300)),
    ]

    /// Expects `body` to throw `invalidExpiration`.
    private func expectInvalid(
        _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await body()
            Issue.record("no error thrown", sourceLocation: sourceLocation)
        } catch LocalStorageError.invalidExpiration {
        } catch {
            Issue.record("threw \(error)", sourceLocation: sourceLocation)
        }
    }

    /// The message says why: a value that is not finite, or a finite one that ends outside the moments the store
    /// can keep (`.days(1e300)` was called "not a finite time", its lifetime overflowing a Double).
    @Test func theMessageTellsANonFiniteLifetimeFromOneOutOfRange() throws {
        for (expiration, words) in [
            (CacheExpiration.days(1e300), "ends outside"), (.seconds(1e300), "ends outside"),
            (.days(.greatestFiniteMagnitude), "ends outside"), (.hours(-1e12), "ends outside"),
            (.seconds(.infinity), "not a finite time"), (.minutes(.nan), "not a finite time"),
        ] {
            #expect {
                _ = try expiration.expiresAt(now: 1_700_000_000_000_000_000)
            } throws: { error in
                guard case .invalidExpiration(let reason) = error as? LocalStorageError else { return false }
                return reason.contains(words)
            }
        }
    }

    /// The whole range the message names is kept, to its last whole second: a margin of 9.2e18 ns refused dates and
    /// lifetimes ending after 2261-07-15 (review-90 N1), and the first second past the range is refused.
    @Test func theRangeTheMessageNamesIsKeptToItsEdges() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let last = Date(timeIntervalSince1970: 9_223_372_036)  // 2262-04-11T23:47:16Z, the last whole second
        let first = Date(timeIntervalSince1970: -9_223_372_036)  // 1677-09-21T00:12:44Z
        for (id, date) in [("last", last), ("late", Date(timeIntervalSince1970: 9_210_000_000))] {
            try await storage.save(Note(id: id, text: "x"), expiration: .date(date))
            let kept = try #require(try await storage.metadata(Note.self, id: id)?.expiresAt)
            #expect(abs(kept.timeIntervalSince(date)) < 0.001, "\(id): \(kept)")
        }
        // A moment in the past is kept as "expired" (the earliest one the header holds).
        try await storage.save(Note(id: "first", text: "x"), expiration: .date(first))
        #expect(try await storage.metadata(Note.self, id: "first")?.isExpired == true)
        let now = Int64(1_700_000_000) * 1_000_000_000
        let left = Double(Int64.max - now) / 1e9
        #expect(try CacheExpiration.seconds(left - 1).expiresAt(now: now) > Int64.max - 2_000_000_000)
        for beyond in [CacheExpiration.date(last.addingTimeInterval(1)), .seconds(left + 1)] {
            #expect(throws: LocalStorageError.self) { _ = try beyond.expiresAt(now: now) }
        }
    }

    @Test(arguments: impossible)
    func saveRefusesAnImpossibleExpiration(expiration: CacheExpiration) async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        await expectInvalid { try await storage.save(Note(id: "n", text: "x"), expiration: expiration) }
        await expectInvalid {
            try await storage.save(
                contentsOf: [Note(id: "a", text: "x"), Note(id: "b", text: "y")], expiration: expiration)
        }
        #expect(try await storage.count(Note.self) == 0)
        #expect(try await storage.metadata(Note.self, id: "n") == nil)
    }

    /// A NaN date is no test argument (describing it traps in Foundation), so it has its own test.
    @Test func aDateThatIsNotANumberIsRefused() async throws {
        let storage = try LocalStorage(configuration: .inMemory)
        let nan = CacheExpiration.date(Date(timeIntervalSince1970: .nan))
        await expectInvalid { try await storage.save(Note(id: "n", text: "x"), expiration: nan) }
        #expect(try await storage.count(Note.self) == 0)
    }

    @Test(arguments: impossible)
    func setExpirationAndTransactionsRefuseIt(expiration: CacheExpiration) async throws {
        // The store's clock never advances: the record saved for 60 s cannot expire on a slow machine.
        var configuration = LocalStorageConfiguration.inMemory
        configuration.clock = VirtualClock()
        let storage = try LocalStorage(configuration: configuration)
        try await storage.save(Note(id: "n", text: "x"), expiration: .seconds(60))
        let before = try await storage.metadata(Note.self, id: "n")?.expiresAt
        await expectInvalid { try await storage.setExpiration(Note.self, id: "n", expiration) }
        await expectInvalid {
            try await storage.write { tx in try tx.save(Note(id: "t", text: "x"), expiration: expiration) }
        }
        await expectInvalid {
            try await storage.write { tx in try tx.save(contentsOf: [Note(id: "u", text: "x")], expiration: expiration)
            }
        }
        await expectInvalid {
            try await storage.write { tx in try tx.setExpiration(Note.self, id: "n", expiration) }
        }
        #expect(try await storage.metadata(Note.self, id: "n")?.expiresAt == before)
        #expect(try await storage.count(Note.self) == 1)
    }
}
