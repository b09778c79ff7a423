// The code listings of the DocC article "Transactions", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum TransactionSnippets {
    struct Order: LocalStorable {
        let id: String
        var cartID: String
        var sku: String
    }

    struct Cart: LocalStorable {
        let id: String
    }

    struct Stock: LocalStorable {
        let id: String
        var count: Int
    }

    enum ShopError: Error {
        case soldOut
    }

    struct User: LocalStorable {
        let id: String
    }

    struct Post: LocalStorageIndexed {
        let id: String
        var author: String

        static var storageIndexes: [StorageIndex<Post>] { [StorageIndex("author", \.author)] }
    }

    @Suite struct Tests {
        @Test func writeAndRead() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            try await storage.save(contentsOf: [Stock(id: "sku_1", count: 3)])
            try await storage.save(Cart(id: "cart_1"))
            try await storage.save(User(id: "u1"))
            try await storage.save(Post(id: "post_1", author: "u1"))
            let order = Order(id: "order_1", cartID: "cart_1", sku: "sku_1")
            // snippet: transactions-write-read
            let left = try await storage.write { tx in
                try tx.save(order, expiration: .days(30))
                try tx.delete(Cart.self, id: order.cartID)
                guard var stock = try tx.fetch(Stock.self, id: order.sku) else { throw ShopError.soldOut }
                stock.count -= 1
                try tx.save(stock)
                return stock.count
            }
            let (user, posts) = try await storage.read { tx in
                (try tx.fetch(User.self, id: "u1"), try tx.fetch(Post.self, matching: [.equals("author", "u1")]))
            }
            // snippet-end
            #expect(left == 2)
            #expect(user?.id == "u1")
            #expect(posts.map(\.id) == ["post_1"])
            #expect(try await storage.fetch(Cart.self, id: "cart_1") == nil)
        }
    }
}
