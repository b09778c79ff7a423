import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// The decoder's key-lookup hints (one slot per open keyed container, on the decode call's stack):
/// random trees deeper than the slots, read with keys asked in shuffled orders, decode as JSON does.
@Suite struct BinaryDecoderHintTests {
    /// A tree node that reads its keys in an order chosen by its own `order` field.
    struct Node: Codable, Equatable {
        var order: Int
        var name: String
        var weight: Double
        var tags: [String]
        var flag: Bool?
        var children: [Node]
        var child: Box?

        enum CodingKeys: String, CodingKey { case order, name, weight, tags, flag, children, child }

        init(
            order: Int, name: String, weight: Double, tags: [String], flag: Bool?, children: [Node], child: Box?
        ) {
            self.order = order
            self.name = name
            self.weight = weight
            self.tags = tags
            self.flag = flag
            self.children = children
            self.child = child
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            order = try container.decode(Int.self, forKey: .order)
            var name = ""
            var weight = 0.0
            var tags: [String] = []
            var flag: Bool?
            var children: [Node] = []
            var child: Box?
            // Some keys asked after a nested value was decoded, in an order that depends on the data.
            let keys: [CodingKeys] = [.name, .weight, .tags, .flag, .children, .child]
            let shift = order % keys.count
            for key in keys[shift...] + keys[..<shift] {
                switch key {
                case .name: name = try container.decode(String.self, forKey: .name)
                case .weight: weight = try container.decode(Double.self, forKey: .weight)
                case .tags: tags = try container.decode([String].self, forKey: .tags)
                case .flag: flag = try container.decodeIfPresent(Bool.self, forKey: .flag)
                case .children: children = try container.decode([Node].self, forKey: .children)
                case .child: child = try container.decodeIfPresent(Box.self, forKey: .child)
                case .order: break
                }
            }
            (self.name, self.weight, self.tags, self.flag, self.children, self.child) =
                (name, weight, tags, flag, children, child)
        }
    }

    /// A reference to a nested node, so that `Node` can contain one.
    final class Box: Codable, Equatable {
        let node: Node
        init(_ node: Node) { self.node = node }
        static func == (lhs: Box, rhs: Box) -> Bool { lhs.node == rhs.node }
    }

    /// Builds a random tree; `depth` levels of `child` below the root, a few siblings on the way.
    static func tree(depth: Int, random: inout SplitMix64) -> Node {
        var node = leaf(random: &random)
        for _ in 0..<depth {
            var parent = leaf(random: &random)
            parent.child = Box(node)
            if random.next() % 4 == 0 {
                parent.children = [leaf(random: &random), leaf(random: &random)]
            }
            node = parent
        }
        return node
    }

    /// A node without nested nodes.
    static func leaf(random: inout SplitMix64) -> Node {
        let tagCount = Int(random.next() % 4)
        return Node(
            order: Int(random.next() % 1000), name: "n\(random.next() % 10_000)",
            weight: Double(random.next() % 1_000_000) / 8, tags: (0..<tagCount).map { "t\($0)" },
            flag: random.next() % 3 == 0 ? nil : random.next() % 2 == 0, children: [], child: nil)
    }

    /// Trees shallower and deeper than the hint slots decode from binary exactly as from JSON.
    @Test func deepTreesWithShuffledKeysMatchJSON() throws {
        var random = SplitMix64(seed: 0x4117)
        for depth in [0, 1, 5, BinaryDecodingState.hintCapacity - 1, BinaryDecodingState.hintCapacity + 7, 90] {
            for _ in 0..<4 {
                let tree = Self.tree(depth: depth, random: &random)
                let json = try JSONEncoder().encode(tree)
                let viaJSON = try JSONDecoder().decode(Node.self, from: json)
                let binary = try BinaryEncoder().encode(tree)
                let viaBinary = try binary.withUnsafeBytes { try BinaryDecoder().decode(Node.self, from: $0) }
                #expect(viaBinary == viaJSON)
                #expect(viaBinary == tree)
                let converted = try BinaryJSON.binary(fromJSON: json)
                let viaConverted = try converted.withUnsafeBytes { try BinaryDecoder().decode(Node.self, from: $0) }
                #expect(viaConverted == viaJSON)
            }
        }
    }

    /// Decoding many values in a row (each call with fresh hint slots) gives each its own result.
    @Test func consecutiveDecodesDoNotShareHints() throws {
        var random = SplitMix64(seed: 0x51075)
        let trees = (0..<50).map { _ in Self.tree(depth: Int(random.next() % 40), random: &random) }
        let payloads = try trees.map { try BinaryEncoder().encode($0) }
        for (tree, payload) in zip(trees, payloads) {
            let decoded = try payload.withUnsafeBytes { try BinaryDecoder().decode(Node.self, from: $0) }
            #expect(decoded == tree)
        }
    }
}
