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
