import Foundation
import LocalStorageTestSupport
import Testing

@testable import LocalStorageKit

/// The fixtures live inside the suite so that their names cannot clash with other test files.
extension BinaryCodecTests {

    /// The record of the performance targets.
    struct Product: Codable, Equatable {
        let id: String
        var title: String
        var category: String
        var price: Double
        var rating: Double
        var stock: Int
        var tags: [String]
        var isFeatured: Bool
    }

    /// An enum with associated values, using synthesized Codable.
    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case rectangle(Double, Double)
        case empty
        case tagged(name: String, values: [Int8], note: String?)
    }

    /// An enum with raw values.
    enum Role: String, Codable, CaseIterable {
        case admin, editor, viewer
    }

    /// A small nested struct.
    struct Child: Codable, Equatable {
        var label: String
        var score: Double?
        var weights: [Float]
        var seen: Date?
        var role: Role
    }

    /// Every field type the codec special-cases, in optional and nested shapes.
    struct RichModel: Codable, Equatable {
        var id: UUID
        var name: String
        var int8: Int8
        var int16: Int16
        var int32: Int32
        var int64: Int64
        var int: Int
        var uint8: UInt8
        var uint16: UInt16
        var uint32: UInt32
        var uint64: UInt64
        var uint: UInt
        var float: Float
        var double: Double
        var flag: Bool
        var date: Date
        var data: Data
        var url: URL
        var decimal: Decimal
        var optionalString: String?
        var optionalInt: Int?
        var nestedOptional: Int??
        var children: [Child]
        var lookup: [String: [Child]]
        var byNumber: [Int: String]
        var byUUID: [UUID: Int]
        var shapes: [Shape]
        var matrix: [[Double?]]
        var inner: Inner?

        /// A nested struct inside the model.
        struct Inner: Codable, Equatable {
            var dates: [Date]
            var blobs: [Data]
            var links: [URL]
            var amounts: [Decimal]
            var shape: Shape
        }
    }

    /// A type using nested containers, encodeNil and superEncoder by hand.
    struct HandWritten: Codable, Equatable {
        var name: String
        var point: (x: Int, y: Int)
        var list: [String?]
        var parent: Int

        /// The top-level keys.
        enum Keys: String, CodingKey {
            case name, point, list, missing
        }

        /// The keys of the nested point.
        enum PointKeys: String, CodingKey {
            case x, y
        }

        /// Creates a value from its parts.
        init(name: String, point: (x: Int, y: Int), list: [String?], parent: Int) {
            self.name = name
            self.point = point
            self.list = list
            self.parent = parent
        }

        /// Compares all fields (tuples are not Equatable).
        static func == (lhs: HandWritten, rhs: HandWritten) -> Bool {
            lhs.name == rhs.name && lhs.point == rhs.point && lhs.list == rhs.list && lhs.parent == rhs.parent
        }

        /// Encodes by hand.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(name, forKey: .name)
            var point = container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
            try point.encode(self.point.x, forKey: .x)
            try point.encode(self.point.y, forKey: .y)
            var list = container.nestedUnkeyedContainer(forKey: .list)
            for item in self.list {
                if let item {
                    try list.encode(item)
                } else {
                    try list.encodeNil()
                }
            }
            try container.encodeNil(forKey: .missing)
            var parent = container.superEncoder().singleValueContainer()
            try parent.encode(self.parent)
        }

        /// Decodes by hand.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            name = try container.decode(String.self, forKey: .name)
            let point = try container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
            self.point = (try point.decode(Int.self, forKey: .x), try point.decode(Int.self, forKey: .y))
            var list = try container.nestedUnkeyedContainer(forKey: .list)
            var items: [String?] = []
            while !list.isAtEnd {
                items.append(try list.decodeNil() ? nil : try list.decode(String.self))
            }
            self.list = items
            #expect(try container.decodeNil(forKey: .missing))
            parent = try container.superDecoder().singleValueContainer().decode(Int.self)
        }
    }

    /// A base class whose subclass shares its keyed container.
    class Animal: Codable {
        var name: String

        /// Creates an animal with a name.
        init(name: String) {
            self.name = name
        }
    }

    /// A subclass that encodes into the same container as its superclass, and one into `super`.
    final class Dog: Animal, Equatable {
        var breed: String

        /// The subclass's keys.
        enum Keys: String, CodingKey {
            case breed
        }

        /// Creates a dog.
        init(name: String, breed: String) {
            self.breed = breed
            super.init(name: name)
        }

        /// Decodes the subclass fields, then the superclass.
        required init(from decoder: any Decoder) throws {
            breed = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .breed)
            try super.init(from: decoder)
        }

        /// Encodes the subclass fields, then the superclass.
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(breed, forKey: .breed)
            try super.encode(to: encoder)
        }

        /// Compares all fields.
        static func == (lhs: Dog, rhs: Dog) -> Bool {
            lhs.name == rhs.name && lhs.breed == rhs.breed
        }
    }

    /// A subclass that stores its superclass under the `super` key.
    final class Cat: Animal, Equatable {
        var lives: Int

        /// The subclass's keys.
        enum Keys: String, CodingKey {
            case lives
        }

        /// Creates a cat.
        init(name: String, lives: Int) {
            self.lives = lives
            super.init(name: name)
        }

        /// Decodes the subclass fields, then the superclass.
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            lives = try container.decode(Int.self, forKey: .lives)
            try super.init(from: container.superDecoder())
        }

        /// Encodes the subclass fields, then the superclass.
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(lives, forKey: .lives)
            try super.encode(to: container.superEncoder())
        }

        /// Compares all fields.
        static func == (lhs: Cat, rhs: Cat) -> Bool {
            lhs.name == rhs.name && lhs.lives == rhs.lives
        }
    }

    /// A type that encodes nothing (JSON writes `{}` for it when nested).
    struct Nothing: Codable, Equatable {
        /// Encodes nothing at all.
        func encode(to encoder: any Encoder) throws {}
        /// Creates the empty value.
        init() {}
        /// Decodes nothing at all.
        init(from decoder: any Decoder) throws {}
    }

    /// A recursive type, to check the nesting limit.
    final class Node: Codable {
        var child: Node?
    }

    /// Writes into a nested container after writing to its parent (not supported; must throw).
    struct Interleaved: Encodable {
        /// The keys.
        enum Keys: String, CodingKey {
            case list, value
        }

        /// Encodes by hand.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var list = container.nestedUnkeyedContainer(forKey: .list)
            try container.encode(1, forKey: .value)
            try list.encode(2)
        }
    }

    /// Takes `superEncoder()` from a container that a later sibling write has finished, then encodes into it
    /// (the encoder handed out has no frame: asking it for a container trapped).
    struct LateSuperEncoder: Codable, Equatable {
        var id = "b1"
        var note = "x"
        enum Keys: String, CodingKey { case id, details }
        enum DetailKeys: String, CodingKey { case unused }
        enum NoteKeys: String, CodingKey { case note }

        init() {}

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var details = container.nestedContainer(keyedBy: DetailKeys.self, forKey: .details)
            try container.encode(id, forKey: .id)
            var inner = details.superEncoder().container(keyedBy: NoteKeys.self)
            try inner.encode(note, forKey: .note)
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            id = try container.decode(String.self, forKey: .id)
            let details = try container.nestedContainer(keyedBy: DetailKeys.self, forKey: .details)
            note = try details.superDecoder().container(keyedBy: NoteKeys.self).decode(String.self, forKey: .note)
        }
    }

    /// A record that writes its containers out of order (a nested container after a later sibling, a
    /// `superEncoder()` taken first and used last), as `JSONEncoder` allows.
    struct OutOfOrder: LocalStorable, Equatable {
        let id: String
        var city: String
        var kind: String
        enum Keys: String, CodingKey { case id, address, parent }
        enum AddressKeys: String, CodingKey { case city }
        enum ParentKeys: String, CodingKey { case kind }

        init(id: String, city: String, kind: String) {
            self.id = id
            self.city = city
            self.kind = kind
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            let parent = container.superEncoder(forKey: .parent)
            var address = container.nestedContainer(keyedBy: AddressKeys.self, forKey: .address)
            try container.encode(id, forKey: .id)
            try address.encode(city, forKey: .city)
            var parentContainer = parent.container(keyedBy: ParentKeys.self)
            try parentContainer.encode(kind, forKey: .kind)
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            id = try container.decode(String.self, forKey: .id)
            city = try container.nestedContainer(keyedBy: AddressKeys.self, forKey: .address)
                .decode(String.self, forKey: .city)
            kind = try container.superDecoder(forKey: .parent).container(keyedBy: ParentKeys.self)
                .decode(String.self, forKey: .kind)
        }
    }

    /// Asks one encoder for a keyed and then an unkeyed container, which `JSONEncoder` traps on: the binary codec
    /// refuses it.
    struct MixedContainers: LocalStorable {
        let id: String
        enum Keys: String, CodingKey { case id }

        init(id: String) { self.id = id }

        func encode(to encoder: any Encoder) throws {
            var keyed = encoder.container(keyedBy: Keys.self)
            try keyed.encode(id, forKey: .id)
            var unkeyed = encoder.unkeyedContainer()
            try unkeyed.encode(1)
        }

        init(from decoder: any Decoder) throws {
            id = try decoder.container(keyedBy: Keys.self).decode(String.self, forKey: .id)
        }
    }
}
