import LocalStorageKit
import LocalStorageTestSupport

/// The record every system stores: the seed's `Product` with a few more fields (~150 bytes of JSON).
struct Product: LocalStorageIndexed, Equatable {
    let id: String
    var title: String
    var category: String
    var price: Double
    var rating: Double
    var stock: Int
    var tags: [String]
    var isFeatured: Bool

    static var storageIndexes: [StorageIndex<Product>] {
        [
            StorageIndex("category", \.category),
            StorageIndex("price", \.price),
            StorageIndex("rating", \.rating),
        ]
    }
}

// MARK: - Generating

extension Product {
    static let categories = [
        "appliances", "automotive", "baby", "beauty", "books", "clothing", "electronics", "garden",
        "grocery", "health", "home", "jewelry", "kitchen", "music", "office", "outdoors", "pets",
        "shoes", "sports", "toys",
    ]
    private static let adjectives = ["Compact", "Deluxe", "Classic", "Smart", "Eco", "Ultra", "Mini", "Pro"]
    private static let nouns = ["Lamp", "Kettle", "Backpack", "Speaker", "Notebook", "Drill", "Blender", "Mug"]
    private static let tagWords = ["new", "sale", "gift", "eco", "bestseller", "limited", "bundle", "clearance"]

    /// The id of the `number`th product: `sku_000001`, `sku_000002`, …
    static func id(_ number: Int) -> String {
        let digits = String(number)
        return "sku_" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    /// A price in 1.00 ... 999.99, in cents.
    static func randomPrice(using generator: inout SplitMix64) -> Double {
        Double(100 + generator.below(99_900)) / 100
    }

    /// `count` products with ids `sku_000001`…, the same for every run with the same seed.
    static func generate(count: Int, seed: UInt64) -> [Product] {
        var generator = SplitMix64(seed: seed)
        return (0..<max(count, 0)).map { offset in
            let number = offset + 1
            let title =
                adjectives[generator.below(adjectives.count)] + " "
                + nouns[generator.below(nouns.count)] + " \(number)"
            let tagCount = 1 + generator.below(3)
            return Product(
                id: id(number),
                title: title,
                category: categories[generator.below(categories.count)],
                price: randomPrice(using: &generator),
                rating: Double(generator.below(51)) / 10,
                stock: generator.below(1_000),
                tags: (0..<tagCount).map { _ in tagWords[generator.below(tagWords.count)] },
                isFeatured: generator.below(10) == 0)
        }
    }
}

// MARK: - Checksums

/// An order-sensitive fingerprint of the products a workload returned, so that the systems can be checked
/// to return the same rows, and so that no decode can be optimised away.
struct Checksum {
    private(set) var value = 0

    mutating func add(_ product: Product) {
        value = value &* 1_000_003 &+ Int(product.price * 100) &* 7_919 &+ product.stock &+ product.tags.count
    }

    mutating func add(_ number: Int) {
        value = value &* 1_000_003 &+ number
    }

    /// An order-free fingerprint of `products` (the sum of each one's own), for queries without an order.
    static func unordered(_ products: some Sequence<Product>) -> Int {
        products.reduce(0) { sum, product in
            var one = Checksum()
            one.add(product)
            return sum &+ one.value
        }
    }
}

extension Product {
    /// This product under another id.
    func withID(_ id: String) -> Product {
        Product(
            id: id, title: title, category: category, price: price, rating: rating, stock: stock, tags: tags,
            isFeatured: isFeatured)
    }
}
