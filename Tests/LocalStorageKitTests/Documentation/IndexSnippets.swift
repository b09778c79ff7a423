// The code listings of the DocC article "Indexes and Queries", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum IndexSnippets {
    // snippet: indexes-user
    struct User: LocalStorageIndexed {
        enum Role: String, Codable, Sendable { case admin, editor, viewer }
        let id: String
        var email: String
        var role: Role
        var age: Int
        var lastSeen: Date

        static var storageIndexes: [StorageIndex<User>] {
            [
                .string("role") { $0.role.rawValue },
                .string("email") { $0.email.lowercased() },
                .number("age") { $0.age },
                .number("lastSeen") { $0.lastSeen },
            ]
        }
    }
    // snippet-end

    // snippet: indexes-listing
    struct Listing: LocalStorageIndexed {
        struct Address: Codable, Sendable {
            var city: String
        }

        let id: Int
        var address: Address
        var price: Int64
        var featuredUntil: Date?

        static var storageIndexes: [StorageIndex<Listing>] {
            [
                StorageIndex("city", \.address.city),
                StorageIndex("price", \.price),
                StorageIndex("featuredUntil", \.featuredUntil),
            ]
        }
    }
    // snippet-end

    static func users() async throws -> LocalStorage {
        let storage = try LocalStorage(configuration: .inMemory)
        let seen = Date(timeIntervalSince1970: 1_700_000_000)
        try await storage.save(contentsOf: [
            User(id: "u1", email: "ops.ada@example.com", role: .admin, age: 36, lastSeen: seen),
            User(id: "u2", email: "Ops.Lin@example.com", role: .editor, age: 24, lastSeen: seen + 60),
            User(id: "u3", email: "kim@example.com", role: .admin, age: 17, lastSeen: seen + 120),
            User(id: "u4", email: "ops.bo@example.com", role: .viewer, age: 29, lastSeen: seen + 180),
            User(id: "u5", email: "sam@example.com", role: .admin, age: 52, lastSeen: seen + 240),
        ])
        return storage
    }

    static func follow(_ storage: LocalStorage) async throws {
        // snippet: indexes-live
        for try await admins in storage.updates(of: User.self, matching: [.equals("role", "admin")]) {
            print("\(admins.count) admins")
        }
        // snippet-end
    }

    @Suite struct Tests {
        // snippet: indexes-generic
        func cheaperThan<Price: StorageIndexNumber>(_ price: Price) -> StorageIndexFilter {
            .lessThan("price", price)
        }
        // snippet-end

        @Test func query() async throws {
            let storage = try await users()
            // snippet: indexes-query
            let admins = try await storage.fetch(
                User.self,
                matching: [.equals("role", "admin"), .atLeast("age", 18)],
                orderedBy: .descending("lastSeen"),
                options: FetchOptions(limit: 20)
            )
            let count = try await storage.count(User.self, matching: [.equals("role", "admin")])
            let page = try await storage.page(
                User.self, matching: [.between("age", 18...30)],
                orderedBy: .ascending("age"), page: 1, pageSize: 50)
            // snippet-end
            #expect(admins.map(\.id) == ["u5", "u1"])
            #expect(count == 3)
            #expect(page.items.map(\.id) == ["u2", "u4"])
        }

        @Test func prefixAndList() async throws {
            let storage = try await users()
            // snippet: indexes-staff
            let staff = try await storage.fetch(
                User.self,
                matching: [.hasPrefix("email", "ops."), .oneOf("role", ["admin", "editor"])]
            )
            // snippet-end
            #expect(staff.map(\.id) == ["u1", "u2"])
        }

        @Test func exactNumbers() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let city = Listing.Address(city: "Lyon")
            try await storage.save(contentsOf: [
                Listing(id: 1, address: city, price: 9_007_199_254_740_992, featuredUntil: nil),
                Listing(id: 2, address: city, price: 9_007_199_254_740_993, featuredUntil: nil),
                Listing(id: 3, address: city, price: 99, featuredUntil: Date()),
                Listing(id: 4, address: city, price: 100, featuredUntil: nil),
            ])
            // snippet: indexes-exact
            let big: Int64 = 9_007_199_254_740_993  // 2^53 + 1, which a Double cannot hold
            let exactlyBig = try await storage.fetch(Listing.self, matching: [.equals("price", big)])
            let under100 = try await storage.count(Listing.self, matching: [.lessThan("price", 99.5)])
            // snippet-end
            #expect(exactlyBig.map(\.id) == [2])
            #expect(under100 == 1)
            #expect(try await storage.count(Listing.self, matching: [cheaperThan(100)]) == 1)
            #expect(try await storage.count(Listing.self, matching: [.equals("city", "Lyon")]) == 4)
            #expect(try await storage.count(Listing.self, matching: [.atLeast("featuredUntil", Date.distantPast)]) == 1)
        }
    }
}
