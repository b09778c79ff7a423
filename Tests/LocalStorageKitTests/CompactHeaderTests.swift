import Foundation
import LocalStorageTestSupport
import Testing

@_spi(Maintenance) @testable import LocalStorageKit

/// The compact record header (magic 0xA8, store layout 4): against the header it was made from on random values,
/// in a new store, in a store upgraded from layout 3 whose records keep their named headers, and with slot numbers
/// the type's description lacks.
@Suite struct CompactHeaderTests {
    /// A random header: times anywhere in Int64 (near each other or not), expiry or none, values of both kinds.
    private static func randomHeader(_ random: inout SplitMix64) -> RecordHeader {
        func time() -> Int64 {
            switch random.next() % 4 {
            case 0: Int64(bitPattern: random.next())
            case 1: 1_700_000_000_000_000_000 + Int64(random.next() % 1_000_000_000_000)
            case 2: [Int64.min, Int64.max, -1, 1][Int(random.next() % 4)]
            default: 1_700_000_000_000_000_000
            }
        }
        let updatedAt = time()
        let createdAt = random.next() % 2 == 0 ? updatedAt : time()
        let expiresAt: Int64 = random.next() % 3 == 0 ? 0 : (random.next() % 2 == 0 ? time() : updatedAt &+ 3_600)
        var values: [StoredIndexValue] = []
        for slot in 0..<Int(random.next() % 5) {
            if random.next() % 2 == 0 {
                let count = Int(random.next() % 300)
                let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                values.append(StoredIndexValue(name: "s\(slot)", kind: .string, bytes: bytes, slot: UInt32(slot * 37)))
            } else {
                let number = Double(bitPattern: random.next())
                let bytes = OrderedKey.encodeNumber(.double(number.isNaN ? 0 : number)) ?? []
                values.append(StoredIndexValue(name: "n\(slot)", kind: .number, bytes: bytes, slot: UInt32(slot)))
            }
        }
        let flags: [PayloadEnvelope] = [[], .compressed, .sealed, [.compressed, .sealed]]
        return RecordHeader(
            format: random.next() % 2 == 0 ? .binary : .json, version: Int(random.next() % 100_000),
            createdAt: createdAt, updatedAt: updatedAt, expiresAt: expiresAt, signature: random.next(),
            indexValues: values, envelope: flags[Int(random.next() % 4)], layout: .compact,
            declarationNumber: UInt32(random.next() % 1_000))
    }

    /// Every field at its widest (10-byte varints, the largest version, declaration and slot numbers, string values
    /// whose lengths take two and three bytes): the writer's bound holds it (the debug build checks every byte it
    /// writes), and it reads back.
    @Test func aCompactHeaderAtItsLargestReadsBack() throws {
        var values: [StoredIndexValue] = []
        for position in 0..<8 {
            let isString = position % 2 == 0
            let count = isString ? (position == 6 ? 20_000 : 300) : OrderedKey.numberLength
            let bytes = [UInt8](repeating: isString ? UInt8(position) : 0xFF, count: count)
            let slot = UInt32.max - UInt32(position)
            values.append(
                StoredIndexValue(name: "index\(position)", kind: isString ? .string : .number, bytes: bytes, slot: slot)
            )
        }
        let header = RecordHeader(
            format: .binary, version: Int(UInt32.max), createdAt: Int64.min, updatedAt: Int64.max,
            expiresAt: Int64.max &+ Int64.max, signature: .max, indexValues: values, envelope: [], layout: .compact,
            declarationNumber: .max)
        let bytes = try header.serialized(payload: [7])
        #expect(bytes[0] == RecordHeader.compactMagic)
        try bytes.withUnsafeBytes { buffer in
            let view = try RecordView(buffer)
            #expect(view.version == Int(UInt32.max) && view.declaration == .number(.max))
            #expect(view.createdAt == Int64.min && view.updatedAt == Int64.max && view.expiresAt == header.expiresAt)
            var read: [(UInt32?, [UInt8])] = []
            view.forEachIndexValue { tag, _, value in
                if case .slot(let slot) = tag { read.append((slot, Array(value))) }
                return true
            }
            #expect(read.map(\.0) == values.map(\.slot))
            #expect(read.map(\.1) == values.map(\.bytes))
            #expect(Array(view.payload) == [7])
        }
    }

    @Test func compactHeadersReadBackAsTheHeaderTheyWereMadeFrom() throws {
        var random = SplitMix64(seed: 26)
        var compact = 0
        for _ in 0..<2_000 {
            let header = Self.randomHeader(&random)
            let payload = (0..<Int(random.next() % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let bytes = try header.serialized(payload: payload)
            // The one expiry the varint cannot hold (Int64.min from the update time) falls back to the named layout.
            let expressible = header.expiresAt == 0 || RecordHeader.zigzag(header.expiresAt &- header.updatedAt) != .max
            #expect(bytes[0] == (expressible ? RecordHeader.compactMagic : RecordHeader.magic))
            if expressible { compact += 1 }
            try bytes.withUnsafeBytes { buffer in
                let view = try RecordView(buffer)
                #expect(view.layout == (expressible ? .compact : .named))
                #expect(view.format == header.format && view.envelope == header.envelope)
                #expect(view.version == header.version)
                let declaration: StoredDeclaration =
                    expressible ? .number(header.declarationNumber ?? 0) : .signature(header.signature)
                #expect(view.declaration == declaration)
                #expect(view.createdAt == header.createdAt && view.updatedAt == header.updatedAt)
                #expect(view.expiresAt == header.expiresAt)
                #expect(Array(view.payload) == payload)
                var read: [(UInt32?, IndexKind, [UInt8])] = []
                view.forEachIndexValue { tag, kind, value in
                    switch tag {
                    case .slot(let slot): read.append((slot, kind, Array(value)))
                    case .name(let name):
                        let named = header.indexValues.first { $0.name.utf8.elementsEqual(name) }
                        read.append((named?.slot, kind, Array(value)))
                    }
                    return true
                }
                #expect(read.map(\.0) == header.indexValues.map(\.slot))
                #expect(read.map(\.1) == header.indexValues.map(\.kind))
                #expect(read.map(\.2) == header.indexValues.map(\.bytes))
            }
            // A header cut short (its length field moved into the values) is damaged, never read past its end.
            if bytes[0] == RecordHeader.compactMagic, let view = try? bytes.withUnsafeBytes({ try RecordView($0) }),
                view.headerLength > RecordHeader.compactFixedLength + 1, !header.indexValues.isEmpty
            {
                var cut = bytes
                let length = UInt16(view.headerLength - 1)
                cut[2] = UInt8(truncatingIfNeeded: length)
                cut[3] = UInt8(truncatingIfNeeded: length >> 8)
                #expect(throws: LocalStorageError.self) { try cut.withUnsafeBytes { _ = try RecordView($0) } }
            }
        }
        #expect(compact > 1_800)
    }

    /// The creation distance takes seven bytes up to a zigzag code of 2^49 − 1 (a record saved again up to 3.2 days
    /// after its creation keeps its size), one byte more past it, and reads back at every width, negative distances
    /// (a clock set back, an import) and Int64's extremes included.
    @Test func theCreationDistanceTakesSevenBytesUntilItNeedsMore() throws {
        #expect(RecordHeader.creationDistanceBytes == 7)
        let updatedAt: Int64 = 1_700_000_000_000_000_000
        let cases: [(distance: Int64, bytes: Int)] = [
            (0, 7), (1, 7), (-1, 7), ((1 << 48) - 1, 7), (-(1 << 48), 7), (1 << 48, 8), (-(1 << 48) - 1, 8),
            (1 << 55 - 1, 8), (1 << 55, 9), (Int64.max, 10), (Int64.min, 10),
        ]
        for (distance, width) in cases {
            var varint: [UInt8] = []
            varint.appendVarint(RecordHeader.zigzag(distance), minimumBytes: RecordHeader.creationDistanceBytes)
            #expect(varint.count == width, "distance \(distance)")
            #expect(varint.dropLast().allSatisfy { $0 & 0x80 != 0 } && varint.last.map { $0 & 0x80 == 0 } == true)
            let header = RecordHeader(
                format: .binary, version: 1, createdAt: updatedAt &- distance, updatedAt: updatedAt, expiresAt: 0,
                signature: 1, indexValues: [], envelope: [], layout: .compact, declarationNumber: 0)
            let bytes = try header.serialized(payload: [1, 2, 3])
            #expect(bytes[0] == RecordHeader.compactMagic)
            // Magic, format, length, update time, expiry, the distance, version and declaration.
            #expect(bytes.count == 4 + 8 + 1 + width + 1 + 1 + 3, "distance \(distance)")
            try bytes.withUnsafeBytes { buffer in
                let view = try RecordView(buffer)
                #expect(view.createdAt == header.createdAt && view.updatedAt == updatedAt)
                #expect(Array(view.payload) == [1, 2, 3])
            }
        }
        // The distance without padding (what records written before hold) reads as the same time.
        let header = RecordHeader(
            format: .binary, version: 1, createdAt: updatedAt + 5, updatedAt: updatedAt, expiresAt: 0,
            signature: 1, indexValues: [], envelope: [], layout: .compact, declarationNumber: 0)
        var bytes = try header.serialized(payload: [9])
        var minimal: [UInt8] = []
        minimal.appendVarint(RecordHeader.zigzag(-5))
        #expect(minimal.count == 1)
        bytes.replaceSubrange(13..<20, with: minimal)
        bytes[2] = UInt8(bytes.count - 1)  // The header's length: all but the payload's one byte.
        try bytes.withUnsafeBytes { buffer in
            let view = try RecordView(buffer)
            #expect(view.createdAt == updatedAt + 5 && Array(view.payload) == [9])
        }
    }

    @Test func aValueWithoutItsSlotOrANumberOfAnotherLengthIsWrittenNamed() throws {
        let base = RecordHeader(
            format: .binary, version: 1, createdAt: 5, updatedAt: 5, expiresAt: 0, signature: 9,
            indexValues: [StoredIndexValue(name: "tag", kind: .string, bytes: Array("x".utf8), slot: 1)],
            layout: .compact, declarationNumber: 0)
        #expect(try base.bytes()[0] == RecordHeader.compactMagic)
        var undeclared = base
        undeclared.declarationNumber = nil
        #expect(try undeclared.bytes()[0] == RecordHeader.magic)
        var unslotted = base
        unslotted.indexValues = [StoredIndexValue(name: "tag", kind: .string, bytes: Array("x".utf8))]
        #expect(try unslotted.bytes()[0] == RecordHeader.magic)
        var shortNumber = base
        shortNumber.indexValues = [StoredIndexValue(name: "n", kind: .number, bytes: [0x12], slot: 2)]
        #expect(try shortNumber.bytes()[0] == RecordHeader.magic)
        // Either way the bytes read back as the same header.
        for header in [undeclared, unslotted, shortNumber] {
            let bytes = try header.serialized(payload: [1, 2, 3])
            try bytes.withUnsafeBytes { buffer in
                let view = try RecordView(buffer)
                #expect(view.updatedAt == 5 && view.declaration == .signature(9) && Array(view.payload) == [1, 2, 3])
            }
        }
    }

    /// A new store is at layout 4 and writes compact headers (about half the bytes of named ones for a product),
    /// and everything that reads headers works on them: queries, counts, pages, re-saves, deletes, `verify`.
    @Test func aNewStoreWritesCompactHeadersThatEveryReadUnderstands() async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        let products = (0..<200).map(Product.sample)
        try await storage.save(contentsOf: products)
        try await storage.save(Product(id: "sku_7", title: "changed", category: "books", price: 99, rating: 4))
        try await storage.delete(Product.self, id: "sku_8")
        var model = Dictionary(uniqueKeysWithValues: products.map { ($0.id, $0) })
        model["sku_7"] = Product(id: "sku_7", title: "changed", category: "books", price: 99, rating: 4)
        model["sku_8"] = nil
        #expect(try CountTreeTests.layout(storage) == "\(TypeRegistry.layout)")
        let schema = try await storage.core.schema(for: Product.self)
        let stored = try storage.core.environment.read { txn in try txn.get(schema.records, key: Array("sku_3".utf8)) }
        let bytes = try #require(stored.map(Array.init))
        #expect(bytes[0] == RecordHeader.compactMagic)
        let named = try bytes.withUnsafeBytes { buffer in
            var header = try RecordView(buffer).header(in: schema, txn: nil)
            header.layout = .named
            return try header.bytes()
        }
        let compactLength = try bytes.withUnsafeBytes { try RecordView($0).headerLength }
        // As OnDiskFormat.md has it: category "books", price and rating (the creation time's distance in 7 bytes).
        #expect(compactLength == 53 && named.count == 100, "compact \(compactLength) bytes, named \(named.count)")

        let cheap = model.values.filter { $0.price >= 50 && $0.price <= 120 }
        let found = try await storage.fetch(
            Product.self, matching: [.between("price", 50.0...120.0)], options: FetchOptions(limit: 1_000))
        #expect(Set(found.map(\.id)) == Set(cheap.map(\.id)))
        let books = model.values.filter { $0.category == "books" && $0.rating >= 2 }
        #expect(
            try await storage.count(Product.self, matching: [.equals("category", "books"), .atLeast("rating", 2.0)])
                == books.count)
        #expect(try await storage.fetch(Product.self, id: "sku_7") == model["sku_7"])
        #expect(try await StoreMaintenance(directory: storage.core.directory).verify().isClean)
    }

    /// A store of layout 3 opened alone becomes layout 5: its named records stay as they are and read as before,
    /// records saved since are compact, and both kinds move in and out of the indexes alike.
    @Test func aLayoutThreeStoreKeepsItsNamedRecordsAndWritesCompactOnes() async throws {
        let directory = temporaryDirectory()
        let products = (0..<120).map(Product.sample)
        try await withStore(diskConfiguration(directory)) { storage async throws in
            try await storage.save(contentsOf: products)
            try await OlderLayouts.make(storage, layout: 3)
        }
        try await withStore(diskConfiguration(directory)) { storage async throws in
            #expect(try CountTreeTests.layout(storage) == "\(TypeRegistry.declarationCountsLayout)")
            var model = Dictionary(uniqueKeysWithValues: products.map { ($0.id, $0) })
            for n in stride(from: 0, to: 120, by: 3) {
                let changed = Product(id: "sku_\(n)", title: "t", category: "garden", price: Double(n % 17), rating: 1)
                try await storage.save(changed)
                model[changed.id] = changed
            }
            for n in stride(from: 1, to: 120, by: 7) {
                try await storage.delete(Product.self, id: "sku_\(n)")
                model["sku_\(n)"] = nil
            }
            let schema = try await storage.core.schema(for: Product.self)
            let magics = try storage.core.environment.read { txn in
                try (0..<120).compactMap { n in try txn.get(schema.records, key: Array("sku_\(n)".utf8))?.first }
            }
            #expect(magics.contains(RecordHeader.magic) && magics.contains(RecordHeader.compactMagic))
            let garden = model.values.filter { $0.category == "garden" }
            let found = try await storage.fetch(
                Product.self, matching: [.equals("category", "garden")], options: FetchOptions(limit: 1_000))
            #expect(Set(found.map(\.id)) == Set(garden.map(\.id)))
            let low = model.values.filter { $0.price < 10 }
            #expect(try await storage.count(Product.self, matching: [.lessThan("price", 10.0)]) == low.count)
            for (id, product) in model { #expect(try await storage.fetch(Product.self, id: id) == product) }
            #expect(try await storage.count(Product.self) == model.count)
            #expect(try await StoreMaintenance(directory: storage.core.directory).verify().isClean)
        }
    }

    /// A compact header names its declaration and index values by the store's numbers: one that names a slot or a
    /// declaration the type's description lacks is a damaged record (reported by `verify`, replaced by a save of its
    /// id), not a crash.
    @Test(arguments: ["slot", "declaration"])
    func aCompactHeaderNamingAnUnknownNumberIsADamagedRecord(_ number: String) async throws {
        let directory = temporaryDirectory()
        let storage = try LocalStorage(configuration: diskConfiguration(directory))
        try await storage.save(contentsOf: (0..<5).map(Product.sample))
        let schema = try await storage.core.schema(for: Product.self)
        try await storage.core.writer.perform { context in
            let key = Array("sku_2".utf8)
            guard let bytes = try context.txn.get(schema.records, key: key) else { return }
            let view = try RecordView(bytes)
            var header = try view.header(in: schema, txn: context.txn)
            if number == "slot" {
                header.indexValues = header.indexValues.map {
                    StoredIndexValue(name: $0.name, kind: $0.kind, bytes: $0.bytes, slot: ($0.slot ?? 0) + 1_000)
                }
            } else {
                header.declarationNumber = 7
            }
            try context.txn.put(schema.records, key: key, value: try header.serialized(payload: Array(view.payload)))
        }
        let problems = try await StoreMaintenance(directory: storage.core.directory).verify().problems
        #expect(problems.map(\.kind) == [.damagedRecord] && problems.first?.id == "sku_2", "\(problems)")
        try await storage.save(Product.sample(2))
        #expect(try await storage.fetch(Product.self, id: "sku_2") == Product.sample(2))
        #expect(try await storage.count(Product.self, matching: [.atLeast("price", 0.0)]) == 5)
        #expect(try await StoreMaintenance(directory: storage.core.directory).verify().isClean)
    }

    /// Two declarations of one stored type: the second adds an index, so it gets a new declaration number and slot.
    struct Shelf: LocalStorageIndexed, Equatable {
        let id: String
        var weight: Double
        var tag: String

        static var storageName: String { "CompactShelf" }
        static var storageIndexes: [StorageIndex<Shelf>] { [StorageIndex("weight", \.weight)] }
    }

    struct TaggedShelf: LocalStorageIndexed, Equatable {
        let id: String
        var weight: Double
        var tag: String

        static var storageName: String { "CompactShelf" }
        static var storageIndexes: [StorageIndex<TaggedShelf>] {
            [StorageIndex("weight", \.weight), StorageIndex("tag", \.tag)]
        }
    }

    /// Maintenance reads the store's catalog when it opens; an app that registers a declaration afterwards writes
    /// compact headers naming a declaration and a slot that catalog lacks. `verify`, `list`, `record` and `export`
    /// name them from the type's description in their own snapshot: none of those records is damaged to them (a
    /// repair would have deleted them, an export left them out).
    @Test func maintenanceOpenedBeforeANewDeclarationReadsItsCompactRecords() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: (0..<5).map { Shelf(id: "s\($0)", weight: Double($0), tag: "old") })
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        try await storage.save(contentsOf: (0..<5).map { TaggedShelf(id: "t\($0)", weight: Double($0), tag: "new") })

        let report = try maintenance.verify()
        #expect(!report.problems.contains { $0.kind == .damagedRecord }, "\(report.problems)")
        let listing = try maintenance.list("CompactShelf")
        #expect(listing.damaged.isEmpty, "\(listing.damaged)")
        #expect(listing.records.count == 10)
        let tagged = try maintenance.record("CompactShelf", id: "t3")
        #expect(tagged.summary.indexes["tag"] != nil && tagged.summary.indexes["weight"] != nil)
        var exported = Data()
        let export = try maintenance.export(to: { exported.append($0) })
        #expect(export.records == 10, "\(export)")
    }

    /// The same type as a third declaration has it: the tag alone, no weight.
    struct TagOnlyShelf: LocalStorageIndexed, Equatable {
        let id: String
        var weight: Double
        var tag: String

        static var storageName: String { "CompactShelf" }
        static var storageIndexes: [StorageIndex<TagOnlyShelf>] { [StorageIndex("tag", \.tag)] }
    }

    /// Which indexes a record belongs in is its declaration's as the snapshot being checked describes it, not as the
    /// catalog read at open did (review-67 #1, #2): records an app saved under a declaration registered since, without
    /// an index the catalog's newest declaration has, are not missing entries there for `verify`, and `list --where`
    /// on an index both declarations have does not call them not re-indexed.
    @Test func maintenanceOpenedBeforeADeclarationWithAnIndexFewerChecksItsRecordsByIt() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        try await storage.save(contentsOf: (0..<5).map { TaggedShelf(id: "t\($0)", weight: Double($0), tag: "a") })
        let maintenance = try await StoreMaintenance(directory: storage.core.directory)
        try await storage.save(contentsOf: (0..<5).map { TagOnlyShelf(id: "o\($0)", weight: Double($0), tag: "a") })

        let report = try maintenance.verify()
        #expect(report.isClean, "\(report.problems)")
        let listing = try maintenance.list(
            "CompactShelf", query: ListQuery(conditions: [ListQuery.Condition(index: "tag", value: "a")]))
        #expect(listing.records.count == 10)
    }

    /// A compact header never holds what the named layout cannot: a save whose index values would make a named
    /// header longer than 65,535 bytes throws, as it did before there was a compact layout (an export, the shared
    /// tier or a rewrite could not write it).
    @Test func aHeaderTooLongForTheNamedLayoutIsRefusedInTheCompactOneToo() async throws {
        let storage = try LocalStorage(configuration: diskConfiguration())
        let long = String(repeating: "x", count: 65_500)
        await #expect(throws: LocalStorageError.self) {
            try await storage.save(TaggedShelf(id: "long", weight: 1, tag: long))
        }
        let fits = String(repeating: "y", count: 65_400)
        try await storage.save(TaggedShelf(id: "fits", weight: 1, tag: fits))
        #expect(try await storage.fetch(TaggedShelf.self, id: "fits")?.tag == fits)
    }

    /// A store of layout 3 that another process has open (an app still on a version that reads named headers only)
    /// stays at layout 3, and this version writes named headers there; the next open that finds it alone upgrades
    /// it, and saves from then on are compact.
    @Test func aLayoutThreeStoreThatAnotherProcessHasOpenKeepsNamedHeaders() async throws {
        let directory = temporaryDirectory()
        let configuration = diskConfiguration(directory)
        try await withStore(configuration) { storage async throws in
            try await storage.save(Product.sample(1))
            try await OlderLayouts.make(storage, layout: 3)
        }
        func firstByte(of id: String, in storage: LocalStorage) async throws -> UInt8? {
            let schema = try await storage.core.schema(for: Product.self)
            return try storage.core.environment.read { txn in try txn.get(schema.records, key: Array(id.utf8))?.first }
        }
        let holder = try HelperProcess([
            "hold-lock", configuration.storeDirectory.appendingPathComponent("lock.mdb").path,
        ])
        try await holder.waitForLine("locked") { $0 == "locked" }
        try await withStore(configuration) { storage async throws in
            #expect(try CountTreeTests.layout(storage) == "3")
            try await storage.save(Product.sample(2))
            #expect(try await firstByte(of: "sku_2", in: storage) == RecordHeader.magic)
            #expect(try await storage.fetch(Product.self, id: "sku_2") == Product.sample(2))
        }
        await holder.kill()
        try await withStore(configuration) { storage async throws in
            #expect(try CountTreeTests.layout(storage) == "\(TypeRegistry.declarationCountsLayout)")
            try await storage.save(Product.sample(3))
            #expect(try await firstByte(of: "sku_3", in: storage) == RecordHeader.compactMagic)
            #expect(try await storage.count(Product.self, matching: [.atLeast("price", 0.0)]) == 3)
        }
    }
}

extension Array where Element == UInt8 {
    /// Appends `value` as an LEB128 varint of at least `minimumBytes` bytes: the reference the header writer's own
    /// varints are checked against.
    fileprivate mutating func appendVarint(_ value: UInt64, minimumBytes: Int = 1) {
        var rest = value
        var written = 1
        while rest >= 0x80 || written < minimumBytes {
            append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
            written += 1
        }
        append(UInt8(rest))
    }
}
